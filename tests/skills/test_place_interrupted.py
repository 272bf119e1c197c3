"""Ctrl-C or SIGTERM (which `kiln` turns into the same exception) between the two renames that
swap a skill folder into place puts the previous version back: an update that is interrupted
never leaves the skill missing. Two renames are the swap where the system cannot exchange two
folders in one step (not Linux, or a file system without ``RENAME_EXCHANGE``); on Linux the
one-step swap is what a SIGKILL meets (``tests/registry/test_install_killed.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skills_registry import skill_folder
from skills_registry.archive import read_dir
from skills_registry.skill_folder import place


def test_an_interrupt_between_the_renames_puts_the_old_skill_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "SKILL.md").write_text("---\nname: helper\ndescription: New.\n---\nnew body\n")
    target = tmp_path / "skills" / "helper"
    target.mkdir(parents=True)
    (target / "SKILL.md").write_text("---\nname: helper\ndescription: Old.\n---\nold body\n")
    real_rename = Path.rename

    def interrupted(self: Path, dest: Path) -> Path:
        if self.name.startswith(".tmp-"):  # the new tree's rename: the signal lands here
            raise KeyboardInterrupt
        return real_rename(self, dest)

    monkeypatch.setattr(skill_folder, "_exchange", lambda a, b: False)  # a system without it
    monkeypatch.setattr(Path, "rename", interrupted)
    with pytest.raises(KeyboardInterrupt):
        place(read_dir(source), target, {"id": "acme/helper"})
    monkeypatch.undo()
    assert "old body" in (target / "SKILL.md").read_text()
    assert sorted(p.name for p in target.parent.iterdir()) == ["helper"]  # no .tmp-, no .old-
