"""Real-world source through the real grammars: no file crashes the chunker, and the
definitions found are plausible (most files define something; as many names per file as the
code has; a Vue or Svelte component's script code). The sources are Debian and npm packages that ``.ci/run`` unpacks into
``$KILN_LANG_CORPUS`` (never committed); Perl's own library comes with Debian. Without them
the cases are skipped with the reason."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from indexer.chunker import chunk_file
from indexer.languages import COMPONENT_LANGUAGES, language_for

CORPUS = Path(os.environ.get("KILN_LANG_CORPUS", "/nonexistent"))

# A component's functions and methods (the Options API's ``onClick(event) {``)
SCRIPT_FUNCTIONS = (
    r"(?m)\bfunction\s+\w+\s*\(|^\s+(?!(?:if|for|while|switch|catch|return|function)\b)"
    r"\w+\s*\([^)]*\)\s*\{"
)

# (language, folder, minimum files, what a definition looks like to a plain regex)
CASES = [
    (
        "php",
        CORPUS / "debian/usr/share/php/Symfony/Component/Console",
        80,
        r"\bfunction\s+\w+\s*\(",
    ),
    ("lua", CORPUS / "debian/usr/share/lua/5.1/pl", 30, r"\bfunction\s+[\w.:]+\s*\("),
    (
        "bash",
        CORPUS / "debian/usr/share/bash-completion/completions",
        300,
        r"(?m)^\s*[\w-]+\s*\(\)",
    ),
    ("kotlin", CORPUS / "npm/package", 150, r"\bfun\s+\w+"),
    ("swift", CORPUS / "npm/package", 150, r"\bfunc\s+\w+"),
    ("perl", Path("/usr/share/perl"), 200, r"(?m)^\s*sub\s+\w+"),
    ("vue", CORPUS / "npm-vue/package", 250, SCRIPT_FUNCTIONS),  # primevue 3.53.1
    ("svelte", CORPUS / "npm-svelte/package", 40, SCRIPT_FUNCTIONS),  # carbon-components-svelte
]


def _files(language: str, folder: Path) -> list[Path]:
    if language == "bash":  # completions have no extension: every regular file is shell
        return sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and language_for(p.name) == language
    )


@pytest.mark.parametrize(
    ("language", "folder", "least", "marker"), CASES, ids=[c[0] for c in CASES]
)
def test_real_source_chunks_with_plausible_definitions(
    language: str, folder: Path, least: int, marker: str
) -> None:
    """Every file chunks; of the files where a plain regex sees a definition, at least 95 %
    get one from the grammar, and at least as many in all as the regex counts, less 10 %
    (a regex also counts definitions nested in functions, which stay in their text)."""
    if not folder.is_dir():
        pytest.skip(f"{folder} absent (.ci/run unpacks it; see KILN_LANG_CORPUS)")
    files = _files(language, folder)
    assert len(files) >= least
    pattern = re.compile(marker)
    seen = found = expected = got = 0
    for path in files:
        data = path.read_bytes()
        blocks = chunk_file(path.relative_to(folder).as_posix(), data, language)
        assert all(b.language == language for b in blocks)
        # a component's name is no definition of its code
        names = sum(len(b.defines) for b in blocks) - (language in COMPONENT_LANGUAGES)
        count = len(pattern.findall(data.decode("utf-8", errors="replace")))
        if count:
            seen += 1
            found += names > 0
            expected += count
            got += names
    assert seen >= least // 2
    assert found / seen >= 0.95, (found, seen)
    assert got >= 0.9 * expected, (got, expected)
