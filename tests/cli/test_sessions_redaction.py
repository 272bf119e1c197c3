"""`kiln sessions list|show|search` print what a session stored from its task: a key typed into
`kiln run "…"` was shown again, as typed, in the title, the transcript and the search excerpts
(to whoever looks at the screen, a shared terminal, a CI log). They redact it as a CI run's
outputs are: the environment's secret values by name, and words with a credential's shape
(`ghp_…`, `sk-ant-…`, `AKIA…`) even when no variable holds them, in text and in JSON; a title
cut at 80 characters in the middle of a token, or an excerpt that begins inside one, included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Built at run time, in the shapes the services issue, so no scanner takes them for real ones.
GITHUB = "ghp_" + "R8x2Kq9LmN4pT7vW1yZ3aB5cD6eF8gH0jK2m"
ANTHROPIC = (
    "sk-ant-api03-" + "Jx7Qm2Lw9Vb4Nc8Tz1Hs6Kd3Pf5Rg0Ya-" + "Ue7Wi2Oq9Mn4Bv8Xc1Zl6As3Df5Gh0Jk"
)
AWS = "AKIA" + "QW3ER5TY7UI9OP1A"
SERVICE = "s3cr3t-" + "hunter2-" + "correcthorse"  # no shape: known from the environment only
EVERY = (GITHUB, ANTHROPIC, AWS, SERVICE)


def kiln(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc


def pieces(secret: str) -> list[str]:
    """The secret and the parts of it long enough to matter (a cut keeps one of them)."""
    return [secret, *(p for p in secret.replace("_", "-").split("-") if len(p) >= 8)]


def assert_no_secret(text: str) -> None:
    for secret in EVERY:
        for piece in pieces(secret):
            assert piece not in text, f"{piece!r} shown in:\n{text}"


TASK = f"deploy with {GITHUB} then call the api with {ANTHROPIC} aws {AWS} svc {SERVICE}"
# Titles are the task's first 80 characters: these end inside a key and inside the variable's
# value, and the first task's ends in `sk-a`.
CUT_KEY = "release notes: push the signed tag with the api key " + ANTHROPIC
CUT_VALUE = "release notes: push the signed tag to the mirror with the svc key " + SERVICE


@pytest.fixture
def ran(tmp_path: Path, kiln_home: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "ws"
    root.mkdir()
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([f"Pushed with {GITHUB}; the key {SERVICE} works.", "Done.", "Ok."])
    )
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "MY_SERVICE_TOKEN": SERVICE}  # fmt: skip
    for task in (TASK, CUT_KEY, CUT_VALUE):
        kiln("run", "--output-format", "json", task, cwd=root, env=env)
    return root, env


def test_list_redacts_titles(ran: tuple[Path, dict[str, str]]) -> None:
    root, env = ran
    out = kiln("sessions", "list", cwd=root, env=env).stdout
    assert_no_secret(out)
    rows = json.loads(kiln("sessions", "list", "--json", cwd=root, env=env).stdout)
    assert sorted(r["title"] for r in rows) == [
        "deploy with [REDACTED] then call the api with [REDACTED]",
        "release notes: push the signed tag to the mirror with the svc key "
        "[REDACTED:MY_SERVICE_TOKEN]",
        "release notes: push the signed tag with the api key [REDACTED]",
    ]
    for row in rows:
        assert row["title"][:40] in out


def first_session(root: Path, env: dict[str, str]) -> str:
    rows = json.loads(kiln("sessions", "list", "--json", cwd=root, env=env).stdout)
    return next(r["id"] for r in rows if r["title"].startswith("deploy"))


def test_a_shaped_token_is_redacted_without_the_variable(
    ran: tuple[Path, dict[str, str]],
) -> None:
    """Another shell, where the variable is not set: the shaped tokens still go; a value of
    no known shape is redacted only where its variable is set."""
    root, env = ran
    bare = {k: v for k, v in env.items() if k != "MY_SERVICE_TOKEN"}
    out = kiln("sessions", "show", first_session(root, env), cwd=root, env=bare).stdout
    for secret in (GITHUB, ANTHROPIC, AWS):
        for piece in pieces(secret):
            assert piece not in out, out
    assert SERVICE in out


def test_show_redacts_the_task_and_the_answer(ran: tuple[Path, dict[str, str]]) -> None:
    root, env = ran
    sid = first_session(root, env)
    text = kiln("sessions", "show", sid, cwd=root, env=env).stdout
    assert_no_secret(text)
    typed = "deploy with [REDACTED] then call the api with [REDACTED] aws [REDACTED] svc "
    assert f"[user] {typed}[REDACTED:MY_SERVICE_TOKEN]" in text
    assert "[assistant] Pushed with [REDACTED]; the key [REDACTED:MY_SERVICE_TOKEN] works." in text
    shown = kiln("sessions", "show", sid, "--json", cwd=root, env=env).stdout
    assert_no_secret(shown)
    assert json.loads(shown)["session"]["id"] == sid


@pytest.mark.parametrize("query", ["deploy", "api", "ghp", "R8x2Kq9LmN4pT7vW1yZ3aB5cD6eF8gH0jK2m"])
def test_search_redacts_excerpts(ran: tuple[Path, dict[str, str]], query: str) -> None:
    """`ghp` marks a match inside the token (`[ghp]_R8x2…`) and the token's body is a word of
    its own to the full-text index: neither shape is a token's any more."""
    root, env = ran
    for args in (("sessions", "search", query), ("sessions", "search", query, "--json")):
        out = kiln(*args, cwd=root, env=env).stdout
        assert "no matching sessions" not in out
        assert_no_secret(out)
