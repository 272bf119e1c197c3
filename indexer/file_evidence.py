"""A file's rank from its blocks: the search ranks blocks, and a reader (the agent, the history
sets) meets a file at its best block. A fix usually edits a large module whose words are spread
over several blocks, while a small block elsewhere may say more of them; the module's other
blocks are evidence for it too (bench/README.md, "Recall, third pass")."""

from __future__ import annotations

from collections import defaultdict

from indexer import weights as W


def raise_by_next_blocks(
    ordered: list[int], meta: dict[int, tuple], fused: dict[int, float]
) -> None:
    """A file ranks by its best block, raised by ``FILE_NEXT_BLOCKS_WEIGHT`` x the scores of
    its next two: of two files whose best blocks are about as good, the one where more of its
    code speaks to the query comes first (the large module a fix edits against one small block
    elsewhere). Only a file's best block moves, so a file keeps its blocks in order; ``ordered``
    is sorted again."""
    firsts: dict[str, int] = {}
    extra: dict[int, float] = defaultdict(float)
    seen: dict[str, int] = defaultdict(int)
    for block_id in ordered:  # best first
        path = meta[block_id][0]
        seen[path] += 1
        if seen[path] == 1:
            firsts[path] = block_id
        elif seen[path] <= 3:
            extra[firsts[path]] += fused[block_id]
    for block_id, more in extra.items():
        fused[block_id] += W.FILE_NEXT_BLOCKS_WEIGHT * more
    ordered.sort(key=lambda i: (-fused[i], i))
