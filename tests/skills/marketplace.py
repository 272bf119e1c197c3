"""A skill's whole path as a user takes it: published to a real `kiln registry serve` on
127.0.0.1 with `kiln skills publish`, installed with `kiln skills install`, then used by a real
`kiln run` whose model is the scripted wire server (the real ``anthropic`` SDK talks to it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.testing.wire_server import WireServer
from tests.registry.conftest import cli_env, kiln, serving

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Market:
    url: str
    data: Path
    kiln_home: Path  # the user's, for installs and runs
    home: Path  # the user's home folder

    def env(self, **extra: str) -> dict[str, str]:
        env = cli_env(self.kiln_home, KILN_REGISTRY=self.url, HOME=str(self.home), **extra)
        return {k: v for k, v in env.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}

    def cli(self, *args: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
        proc = kiln(*args, env=self.env(), cwd=cwd, timeout=300)
        assert "Traceback" not in proc.stderr, proc.stderr
        if ok:
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def publish(self, folder: Path, version: str, namespace: str = "acme") -> None:
        made = kiln("registry", "token", "--data", str(self.data), "--namespace", namespace,
                    env=cli_env(self.kiln_home), cwd=folder.parent)  # fmt: skip
        assert made.returncode == 0, made.stderr
        self.cli("skills", "publish", str(folder), "--token", made.stdout.strip(),
                 "--version", version, cwd=folder.parent)  # fmt: skip


@contextmanager
def market(tmp_path: Path) -> Iterator[Market]:
    """A registry served by a real `kiln registry serve` process, and a user to install from it."""
    kiln_home, home = tmp_path / "user-kiln", tmp_path / "user-home"
    home.mkdir()
    with serving(tmp_path / "registry-data", tmp_path / "operator") as port:
        yield Market(f"http://127.0.0.1:{port}", tmp_path / "registry-data", kiln_home, home)


def skill_folder(parent: Path, name: str, *, front: str = "", body: str = "Steps.\n",
                 files: dict[str, str] | None = None) -> Path:  # fmt: skip
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Use for {name} tasks.\n{front}---\n{body}"
    )
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def sidecar(name: str, description: str, script: str, properties: dict[str, Any] | None = None
            ) -> dict[str, str]:  # fmt: skip
    """The files of one sidecar tool: its declaration and a Python script."""
    spec = {"name": name, "description": description, "command": f"scripts/{name}.py",
            "input_schema": {"type": "object", "properties": properties or {}}}  # fmt: skip
    return {f"tools/{name}.json": json.dumps(spec), f"scripts/{name}.py": script}


@dataclass
class WireRun:
    proc: subprocess.CompletedProcess[str]
    requests: list[Any]  # the JSON bodies the SDK sent

    def tool_results(self) -> list[str]:
        """Every tool result's text, in order, from the last request (the whole trajectory)."""
        out = []
        for message in self.requests[-1]["messages"]:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, list):
                        inner = "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                    out.append(str(inner))
        return out


def run_with_wire(
    m: Market, root: Path, steps: list[Any], *args: str, env: dict[str, str] | None = None
) -> WireRun:
    """`kiln run ARGS go` in ``root`` against the wire server following ``steps`` (then done);
    ``env`` adds to the user's environment."""
    env = m.env(**(env or {}))
    with WireServer([*steps, "done"]) as server:
        env.update(PYTHONPATH=str(ROOT), ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.url)
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", *args, "go"],
            cwd=root, env=env, capture_output=True, text=True, timeout=300,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert "Traceback" not in proc.stderr, proc.stderr
        return WireRun(proc, [r.body for r in server.requests])


def step(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "input": args}]}


__all__ = ["Market", "market", "run_with_wire", "sidecar", "skill_folder", "step"]
