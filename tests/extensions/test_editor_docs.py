"""The editor guides name what the extensions have: docs/vscode.md's settings (with their
defaults), commands and key bindings are the ones extensions/vscode/package.json contributes,
and docs/neovim.md's commands, default mappings and setup options are the ones the Neovim
plugin defines. Read from the files themselves; no editor needed."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VSCODE_DOC = (ROOT / "docs/vscode.md").read_text()
NVIM_DOC = (ROOT / "docs/neovim.md").read_text()
PACKAGE = json.loads((ROOT / "extensions/vscode/package.json").read_text())["contributes"]
NVIM = ROOT / "extensions/nvim"


def settings() -> dict[str, object]:
    configuration = PACKAGE["configuration"]
    blocks = configuration if isinstance(configuration, list) else [configuration]
    return {k: v.get("default") for b in blocks for k, v in b["properties"].items()}


def test_the_vscode_settings_table_is_package_json() -> None:
    table = VSCODE_DOC.split("## Settings")[1].split("\n\n")[1]
    documented: dict[str, str] = {}
    for row in table.splitlines()[2:]:
        names, default = row.split("|")[1:3]
        for name in re.findall(r"`(kiln\.[\w.]+)`", names):
            documented[name] = re.findall(r"`([^`]*)`", default)[0]
    declared = settings()
    assert sorted(documented) == sorted(declared)
    for name, default in documented.items():
        try:
            value: object = json.loads(default)
        except json.JSONDecodeError:
            value = default  # `ask`, `off`: a bare string
        assert value == declared[name], f"docs/vscode.md: {name} defaults to {declared[name]!r}"


def test_the_vscode_commands_and_keys_the_guide_names_exist() -> None:
    titles = {c["title"]: c["command"] for c in PACKAGE["commands"]}
    named = {" ".join(n.split()) for n in re.findall(r"\*\*Kiln: ([^*]+)\*\*", VSCODE_DOC)}
    assert named, "the guide names no command"
    assert not named - set(titles), f"docs/vscode.md names unknown commands: {named - set(titles)}"
    keys = {(k["key"], k["command"]) for k in PACKAGE["keybindings"]}
    keys |= {(k["mac"], k["command"]) for k in PACKAGE["keybindings"] if "mac" in k}
    # "**Kiln: Edit Selection** (**Ctrl+I** / **Cmd+I** …": each key beside its command
    for title, key in [
        ("Edit Selection", "ctrl+i"), ("Edit Selection", "cmd+i"),
        ("Add Selection to Chat", "ctrl+alt+a"), ("Open Chat", "ctrl+alt+k"),
        ("Open Chat", "cmd+alt+k"),
    ]:  # fmt: skip
        assert (key, titles[f"{title}"]) in keys, (title, key)
    for shown in re.findall(r"\b((?:Ctrl|Cmd)(?:\+[A-Z][a-z]*)+)\b", VSCODE_DOC):
        assert any(k == shown.lower() for k, _ in keys), f"docs/vscode.md shows {shown}"


def test_the_neovim_commands_are_the_plugins() -> None:
    defined = set(re.findall(r"cmd\('(Kiln\w+)'", (NVIM / "plugin/kiln.lua").read_text()))
    documented = set(re.findall(r":(?:'<,'>)?(Kiln\w+)", NVIM_DOC))
    assert documented == defined


def test_the_neovim_mappings_and_setup_options_are_the_plugins() -> None:
    init = (NVIM / "lua/kiln/init.lua").read_text()
    maps = set(re.findall(r"\{ '[nx]', '([^']+)'", init))
    sentence = NVIM_DOC.split("Default mappings")[1].split("\n\n")[0]
    shown = set(re.findall(r"`(<[^`]+?)`", sentence.split("On a fenced")[0]))
    assert shown and shown <= maps, shown - maps
    config = (NVIM / "lua/kiln/config.lua").read_text()
    defaults = set(re.findall(r"^  (\w+) = ", config, re.M))
    block = NVIM_DOC.split("## Configure")[1].split("```")[1]
    assert set(re.findall(r"^  (\w+) = ", block, re.M)) <= defaults
    for key, value in re.findall(r"^  (cmd|root_markers) = (\{[^}]*\})", block, re.M):
        plugin_default = re.search(rf"^  {key} = (\{{[^}}]*\}})", config, re.M)
        assert plugin_default and plugin_default[1].replace("'", '"') == value, key
