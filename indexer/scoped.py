"""Candidates from the folder a query's component names: the file list searched below it.

In a workspace of a hundred crates, "fix(css_formatter): format comments before !important"
says where the fix is (``crates/biome_css_formatter/``), but the words after the scope are
common ones ("format", "comments") that every formatter crate says as often, and the block
search can afford only the rarest of them (``ranking._lexical``). The scope prior
(``structure.folder_holds``) can only raise a file that is a candidate already; this module
makes candidates of the files below that folder: the file list (``filelist.ranked``, every
query term scored) restricted to the folder, whose best files bring a block each, fused as one
more list. The folder is the one a candidate lies in, else (no candidate there: every block
the search found is in a sibling crate) one found among the tree's paths. Only for a
component named in two words or more (``css_formatter``,
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
    if not folders and W.SCOPE_FOLDER_FROM_TREE:
        folders = named_folders(conn, parts)
    if not folders or len(folders) > W.SCOPE_FOLDERS_MAX:
        return []
    under = sorted(folders)
    # every term: below one folder a word common in the whole tree can still tell files apart
    files = filelist.ranked(conn, terms, W.SCOPE_FILE_CANDIDATES, 1.0, under)
    return filelist.blocks_of(conn, files, terms, lexical, df_cache)


def named_folders(conn: sqlite3.Connection, parts: tuple[str, ...]) -> dict[str, None]:
    """The folders of the indexed tree that hold every word of ``parts``, for a component no
    candidate lies in (``fix(parser/yaml)`` when every candidate is in ``biome_yaml_syntax``
    or ``biome_yaml_formatter``, none in ``biome_yaml_parser``). At most
    ``SCOPE_FOLDERS_MAX + 1`` are looked for: more say nothing (see ``candidates``)."""
    likes = " AND ".join("path LIKE ?" for _ in parts)
    args = [f"%{part}%" for part in parts]  # letters and digits only: no LIKE wildcards
    folders: dict[str, None] = {}
    for (path,) in conn.execute(f"SELECT path FROM files WHERE {likes}", args):
        if folders and path.startswith(tuple(folders)):
            continue
        folder = scope_folder(parts, path)
        if folder is not None and folder not in folders:
            folders[folder] = None
            if len(folders) > W.SCOPE_FOLDERS_MAX:
                break
    return folders
