"""What `kiln run` was asked to do: the task and every option of the command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lsp_server.headless import repo_git


@dataclass
class RunOptions:
    task: str
    root: Path
    output_format: str = "text"
    mode: str = "ask"
    ci: bool = False
    verify: str | None = None
    max_steps: int = 50
    max_minutes: float | None = None
    max_cost_usd: float | None = None
    commit_branch: str | None = None
    commit_partial: bool = False  # a branch also for a run that stopped early
    author: str | None = None
    artifacts: Path | None = None
    resume: str | None = None
    provider: str | None = None
    model: str | None = None
    assume_yes: bool = False
    cwd: str = ""  # the user's directory relative to root, when kiln ran from a subdirectory
    no_sandbox: bool = False
    patch_limits: repo_git.Limits = field(default_factory=repo_git.Limits)

    @property
    def sandbox(self) -> str:
        """ "off" with --no-sandbox; "required" in --ci (refuse commands without a sandbox)."""
        return "off" if self.no_sandbox else ("required" if self.ci else "auto")
