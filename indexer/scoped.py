"""Candidates from the folder a query's component names: the file list searched below it.

In a workspace of a hundred crates, "fix(css_formatter): format comments before !important"
says where the fix is (``crates/biome_css_formatter/``), but the words after the scope are
common ones ("format", "comments") that every formatter crate says as often, and the block
search can afford only the rarest of them (``ranking._lexical``). The scope prior
(``structure.folder_holds``) can only raise a file that is a candidate already; this module
makes candidates of the files below that folder: the file list (``filelist.ranked``, every
query term scored) restricted to the folder, whose best files bring a block each, fused as one
more list. Only for a component named in two words or more (``css_formatter``,
``format/html``, ``parser/yaml``): one word (``fix(html)``, ``fix(lsp)``) matches a dozen
crates in such a workspace, and searching below them cost the large dev tree queries at
rank 1 (bench/README.md, "Crates and folders").
"""

from __future__ import annotations

import sqlite3

from indexer import filelist
from indexer import weights as W
from indexer.structure import scope_folder


def candidates(
    conn: sqlite3.Connection,
    terms: list[str],
    parts: tuple[str, ...],
    first: list[int],
    lexical: list[int],
    df_cache: dict[str, int],
) -> list[int]:
    """Best blocks of the files below the folders that hold every word of ``parts`` (the
    scope's words) among the paths of the candidate blocks ``first``; best file first.
    ``lexical`` and ``df_cache`` are the block search's list and term counts."""
    if W.SCOPE_FILE_CANDIDATES <= 0 or W.SCOPE_FILE_WEIGHT <= 0 or len(parts) < 2 or not first:
        return []
    marks = ",".join("?" * len(first))
    paths = conn.execute(f"SELECT DISTINCT path FROM block_rows WHERE id IN ({marks})", first)
    folders = {f: None for (path,) in paths if (f := scope_folder(parts, path)) is not None}
    if not folders or len(folders) > W.SCOPE_FOLDERS_MAX:
        return []
    under = sorted(folders)
    # every term: below one folder a word common in the whole tree can still tell files apart
    files = filelist.ranked(conn, terms, W.SCOPE_FILE_CANDIDATES, 1.0, under)
    return filelist.blocks_of(conn, files, terms, lexical, df_cache)
