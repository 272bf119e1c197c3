"""An edited Vue or Svelte component (an editor's buffer, a watcher event): its script blocks
re-parsed incrementally from the last version's tree (moved along with the edit; the blocks'
ranges found again, since an edit in the template moves them), the whole component chunked
again. ``rechunk.chunk_edit`` hands components here; the blocks are always a full chunk's
(``tests/indexer/test_language_edits.py``)."""

from __future__ import annotations

from indexer.blocks import Block
from indexer.chunker import chunk_component
from indexer.components import script_tree
from indexer.incremental import Entry, TreeCache, byte_edit


def chunk_component_edit(
    trees: TreeCache, path: str, data: bytes, language: str, data_digest: str | None
) -> list[Block]:
    """All blocks of the component ``path`` as ``data``; ``trees`` keeps its last version."""
    entry = trees.take(path)
    old = None
    if entry is not None and entry.language == language and entry.blocks is not None:
        edit = byte_edit(entry.data, data)
        if edit is None:
            entry.digest = entry.digest or data_digest
            trees.put(path, entry)
            return list(entry.blocks)
        old = entry.tree  # (script grammar, tree, whether the file had script blocks)
        old[1].edit(**edit)
    script, tree, scripted = script_tree(language, data, old)
    blocks = chunk_component(path, data, language, script, tree)
    trees.put(path, Entry(language, data, (script, tree, scripted), blocks, data_digest))
    return blocks
