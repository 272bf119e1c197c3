"""The grammars ship with the pinned `tree-sitter-language-pack` (newer releases download them at
run time, which fails offline): the installed version is the pin, and every language the
indexer has a query for loads and parses in a process whose sockets all refuse to connect."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

OFFLINE_LOAD = """
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network refused by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
from indexer.languages import grammar, new_parser
names = sys.argv[1:]
for name in names:
    assert grammar(name) is not None, name
    tree = new_parser(name).parse(b"x\\n")
    assert tree.root_node is not None, name
import tree_sitter_language_pack as tslp
from indexer.languages import COMPONENT_LANGUAGES
for host in sorted(COMPONENT_LANGUAGES):  # .vue/.svelte hosts, parsed by indexer.components
    assert tslp.get_language(host) is not None, host
print(len(names))
"""


def test_the_grammar_package_is_the_pinned_release() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = [d for d in deps["dependencies"] if d.startswith("tree-sitter-language-pack")]
    assert pins == ["tree-sitter-language-pack==0.13.0"]
    assert metadata.version("tree-sitter-language-pack") == "0.13.0"


def test_every_indexed_language_loads_without_the_network() -> None:
    names = sorted(p.stem for p in (ROOT / "indexer" / "queries").glob("*.scm"))
    assert len(names) >= 20 and "python" in names
    proc = subprocess.run(
        [sys.executable, "-c", OFFLINE_LOAD, *names],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(rf"{len(names)}\s*", proc.stdout)
