"""The registry's git repositories are read-only, and a `git push` is told so. Before, the
ref discovery of a push (`info/refs?service=git-receive-pack`) got the dumb protocol's refs,
so git took the server for a dumb one and tried a WebDAV push that failed without a reason;
now it is a 403 whose one `text/plain` line git shows (`remote: …`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from tests.registry.conftest import FIXTURES, cli_env, kiln, ok, serving

SKILL = "acme/brand-guidelines"


def _git(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"GIT_TERMINAL_PROMPT": "0", "HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_a_push_is_refused_with_a_line_git_shows(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    with serving(data, home) as port:
        url = f"http://127.0.0.1:{port}"
        env = cli_env(home)
        token = ok(kiln("registry", "token", "--namespace", "acme", "--data", str(data),
                        env=env, cwd=tmp_path)).strip()  # fmt: skip
        ok(kiln("skills", "publish", str(FIXTURES / "brand-guidelines"), "--version", "1.0.0",
                "--token", token, "--registry", url, env=env, cwd=tmp_path))  # fmt: skip
        repo = f"{url}/git/{SKILL}.git"
        cloned = _git("clone", "-q", repo, "clone", cwd=tmp_path, home=tmp_path)
        assert cloned.returncode == 0, cloned.stderr
        head = _git("rev-parse", "HEAD", cwd=tmp_path / "clone", home=tmp_path).stdout

        clone = tmp_path / "clone"
        (clone / "extra.md").write_text("pushed\n")
        _git("add", "extra.md", cwd=clone, home=tmp_path)
        _git("-c", "user.name=n", "-c", "user.email=n@example.org", "commit", "-qm", "x",
             cwd=clone, home=tmp_path)  # fmt: skip
        pushed = _git("push", "origin", "HEAD:main", cwd=clone, home=tmp_path)
        assert pushed.returncode != 0
        assert "remote: this registry's git repositories are read-only" in pushed.stderr, (
            pushed.stderr
        )
        assert "403" in pushed.stderr

        refs = httpx.get(f"{repo}/info/refs", params={"service": "git-receive-pack"})
        assert refs.status_code == 403 and refs.headers["content-type"].startswith("text/plain")
        assert refs.text.count("\n") == 1 and "read-only" in refs.text
        pack = httpx.post(f"{repo}/git-receive-pack", content=b"0000")
        assert pack.status_code == 403 and "read-only" in pack.text
        other = httpx.get(f"{repo}/info/refs", params={"service": "git-frobnicate"})
        assert other.status_code == 403 and "unsupported git service" in other.text

        again = _git("clone", "-q", repo, "again", cwd=tmp_path, home=tmp_path)
        assert again.returncode == 0, again.stderr
        assert _git("rev-parse", "HEAD", cwd=tmp_path / "again", home=tmp_path).stdout == head
        assert not (tmp_path / "again" / "extra.md").exists()
