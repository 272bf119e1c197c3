"""A file's rows, built where the file was chunked (a worker process during full runs, the
editor's thread for an edit), so the writer (``store``) only binds parameters: the block
columns, the names each block defines and references, and the file's row in the file list."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from indexer import filelist
from indexer.blocks import Block
from indexer.tokens import camel_of_runs, camel_parts, identifier_runs, name_terms, path_terms


@dataclass
class Prepared:
    """A file's rows, built where the file was chunked (a worker process during full runs) so
    the writer only binds parameters."""

    rows: list[tuple]  # block columns after (id, file_id), in BLOCK_COLUMNS order
    defs: list[list[str]]  # per block: lower-cased names it defines
    refs: list[list[str]]  # per block: lower-cased names it references
    words: str = ""  # the file's row in the file list (``filelist.words``)
    language: str = "text"  # the file's row's language (``languages.language_of``)

    def __len__(self) -> int:
        return len(self.rows)


BLOCK_COLUMNS = (
    "path, language, kind, name, signature, docstring, start_line, end_line, hash, text, refs, "
    "fts_path, fts_name, idents"
)


def prepare(
    rel: str, blocks: list[Block], known: frozenset[str] = frozenset(), language: str = "text"
) -> Prepared:
    """Rows for ``blocks``; blocks whose hash is in ``known`` are probably about to be kept as
    they are, so their derived search columns (name parts, camelCase parts) are left as
    ``None`` and computed by ``write_file`` only if such a row is inserted after all (a block
    pasted twice: the second copy has nothing to be kept as).

    Each block's text is cut into runs once: they give its camelCase column and, for the file
    list, the text's words (the two cuts differ only in ``$``, which joins identifiers and
    ends words: a text holding one is cut again)."""
    ptext = path_terms(rel)
    rows = []
    defs = []
    refs = []
    parts = [rel]  # the file list's strings other than the texts ...
    words: set[bytes] = set()  # ... and the texts' words
    for b in blocks:
        ref_names = lowered(b.refs)
        try:
            data = b.text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the two cuts encode it differently
            idents = None if b.hash in known else camel_parts(b.text)
            parts.append(b.text)
        else:
            runs = identifier_runs(data)
            idents = None if b.hash in known else camel_of_runs(runs)
            words.update(filelist.text_tokens(data) if b"$" in data else runs)
        rows.append(
            (
                rel,
                b.language,
                b.kind,
                b.name,
                b.signature,
                b.docstring,
                b.start_line,
                b.end_line,
                b.hash,
                b.text,
                " ".join(ref_names),
                ptext,
                None if b.hash in known else name_terms(b.name),
                idents,
            )
        )
        defs.append(lowered(b.defines))
        refs.append(ref_names)
        parts += (b.name, b.signature, b.docstring)
    words_row = filelist.words_of(parts, words) if blocks else ""
    return Prepared(rows, defs, refs, words_row, language)


def lowered(names: Collection[str]) -> list[str]:
    """The distinct lower-cased ``names``, sorted; lower-cased in one go (names are
    identifiers: joined by newlines, each lower-cases as it would alone, ``str.lower``'s one
    rule that looks at neighbours, the final sigma, stopping at a newline)."""
    if not names:
        return []
    low = "\n".join(names).lower().split("\n")
    return sorted(set(low) if len(low) == len(names) else {n.lower() for n in names})
