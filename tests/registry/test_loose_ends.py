"""The registry's loose ends, each refused or shown the way a user can act on, over real HTTP."""

from __future__ import annotations

import gzip
import io
import json
import re
import select
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import httpx
import pytest

from skills_registry.archive import ArchiveContents, build_archive
from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill

SKILL_MD = b"---\nname: notes\ndescription: Writes meeting notes.\n---\n# Notes\n"
DEEP = "---\nname: deep\ndescription: d\nmetadata: " + "[" * 500 + "]" * 500 + "\n---\nbody\n"


def _archive(files: dict[str, bytes], top: str = "notes") -> bytes:
    return build_archive(ArchiveContents(top, files))


def _put(reg: LiveRegistry, token: str, name: str, version: str, body: bytes) -> httpx.Response:
    return httpx.put(
        f"{reg.url}/v1/skills/acme/{name}/versions/{version}",
        content=body,
        headers={"Authorization": f"Bearer {token}"},
    )


def _blobs(reg: LiveRegistry) -> list[Path]:
    root = reg.data / "blobs"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"SKILL.md": DEEP.replace("deep", "notes").encode()}, "nests deeper than 16 levels"),
        ({"SKILL.md": SKILL_MD, "a" * 300 + ".md": b"x"}, "file systems allow 255"),
        (
            {"SKILL.md": SKILL_MD, ".kiln-install.json": b"{}"},
            "'.kiln-install.json' is build output",
        ),
        ({"SKILL.md": SKILL_MD, "node_modules/x/index.js": b""}, "'node_modules' is build output"),
        ({"SKILL.md": SKILL_MD, "lib/__pycache__/a.pyc": b""}, "'__pycache__' is build output"),
        ({"SKILL.md": SKILL_MD + b"x" * (1024 * 1024)}, "the limit is 1048576"),
    ],
)
def test_refused_at_publish_with_a_clear_message(
    registry: LiveRegistry, files: dict[str, bytes], words: str
) -> None:
    response = _put(registry, registry.token("acme"), "notes", "1.0.0", _archive(files))
    assert response.status_code == 422, response.text
    assert any(words in e for e in response.json()["errors"]), response.json()
    assert _blobs(registry) == []


def test_trailing_gzip_member_is_refused(registry: LiveRegistry) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("notes/hidden.sh")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    body = _archive({"SKILL.md": SKILL_MD}) + gzip.compress(raw.getvalue())
    response = _put(registry, registry.token("acme"), "notes", "1.0.0", body)
    assert response.status_code == 422 and "trailing data" in response.text
    assert _blobs(registry) == []


def test_rejected_uploads_leave_no_blob_and_build_metadata_is_no_new_version(
    registry: LiveRegistry,
) -> None:
    token = registry.token("acme")
    assert (
        _put(registry, token, "notes", "1.0.0", _archive({"SKILL.md": SKILL_MD})).status_code == 201
    )
    assert len(_blobs(registry)) == 1
    other = _archive({"SKILL.md": SKILL_MD, "more.md": b"more"})
    taken = _put(registry, token, "notes", "1.0.0", other)
    assert taken.status_code == 409
    same = _put(registry, token, "notes", "1.0.0+build.5", other)
    assert same.status_code == 409 and "same precedence" in same.json()["error"]["message"]
    invalid = _put(registry, token, "notes", "1.0.1", _archive({"SKILL.md": b"no frontmatter"}))
    assert invalid.status_code == 422
    assert len(_blobs(registry)) == 1


def test_unicode_names_get_the_rule_by_name(registry: LiveRegistry) -> None:
    body = _archive({"SKILL.md": "---\nname: café\ndescription: Coffee.\n---\n".encode()}, "café")
    response = _put(registry, registry.token("acme"), "café", "1.0.0", body)
    assert response.status_code == 422
    message = response.json()["errors"][0]
    assert "valid under the Agent Skills spec" in message and "registry names are ASCII" in message


def test_empty_deprecation_body_is_an_error_not_an_undo(registry: LiveRegistry) -> None:
    token = registry.token("acme")
    _put(registry, token, "notes", "1.0.0", _archive({"SKILL.md": SKILL_MD}))
    url = f"{registry.url}/v1/skills/acme/notes/deprecation"
    auth = {"Authorization": f"Bearer {token}"}
    assert httpx.put(url, json={"message": "use acme/minutes"}, headers=auth).status_code == 200
    for body in (b"", b"{}", b'{"message": ""}'):
        assert httpx.put(url, content=body, headers=auth).status_code in (400, 422), body
    assert (
        httpx.get(f"{registry.url}/v1/skills/acme/notes").json()["deprecated"] == "use acme/minutes"
    )
    assert httpx.put(url, json={"message": None}, headers=auth).json()["deprecated"] is None


def test_deprecation_and_yanks_reach_cli_users(registry: LiveRegistry, tmp_path: Path) -> None:
    token = registry.token("acme")
    for version in ("1.0.0", "1.1.0"):
        _put(registry, token, "notes", version, _archive({"SKILL.md": SKILL_MD}))
    auth = {"Authorization": f"Bearer {token}"}
    base = f"{registry.url}/v1/skills/acme/notes"
    httpx.put(f"{base}/deprecation", json={"message": "use acme/minutes"}, headers=auth)
    httpx.put(
        f"{base}/versions/1.1.0/status",
        json={"status": "yanked", "reason": "leaks tokens"},
        headers=auth,
    )
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)

    search = kiln("skills", "search", "notes", env=env, cwd=tmp_path)
    assert "[deprecated: use acme/minutes]" in search.stdout
    info = kiln("skills", "info", "acme/notes", env=env, cwd=tmp_path)
    assert "DEPRECATED: use acme/minutes" in info.stdout
    install = kiln("skills", "install", "acme/notes@1.1.0", "--yes", env=env, cwd=tmp_path)
    assert install.returncode == 0, install.stderr
    assert "acme/notes@1.1.0 is yanked: leaks tokens" in install.stderr
    assert "acme/notes is deprecated: use acme/minutes" in install.stderr


def test_deep_frontmatter_in_a_cloned_project_is_skipped_not_fatal(tmp_path: Path) -> None:
    project = tmp_path / "project"
    make_skill(project / ".kiln" / "skills", "fine", description="A fine skill.")
    deep = project / ".kiln" / "skills" / "deep"
    deep.mkdir(parents=True)
    (deep / "SKILL.md").write_text(DEEP, encoding="utf-8")
    env = cli_env(tmp_path / "home")

    validate = kiln("skills", "validate", str(project / ".kiln" / "skills"), env=env, cwd=project)
    assert validate.returncode == 1 and "Traceback" not in validate.stderr
    assert "nests deeper than 16 levels" in validate.stdout and "fine: valid" in validate.stdout
    listed = kiln("skills", "list", "--json", env=env, cwd=project)
    assert listed.returncode == 0 and [s["name"] for s in json.loads(listed.stdout)] == ["fine"]
    assert "nests deeper" in listed.stderr

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "done"}]))
    run_env = {**env, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    run = kiln("run", "hello", env=run_env, cwd=project)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "done" in run.stdout


def test_listening_line_means_the_socket_accepts(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "registry",
            "serve",
            "--port",
            "0",
            "--data",
            str(tmp_path / "data"),
        ],
        env=cli_env(tmp_path / "home"),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        host, port = re.search(r"listening on http://([\d.]+):(\d+)", line).groups()  # type: ignore[union-attr]
        socket.create_connection((host, int(port)), timeout=5).close()  # refused if too early
        assert httpx.get(f"http://{host}:{port}/.well-known/kiln-registry.json").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_stdout_carries_the_url_alone_for_scripts(tmp_path: Path) -> None:
    """The address was only in a sentence on stderr, among the logs: a script had to pick the
    port out of prose. Stdout now holds one line, the URL, once the socket accepts."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "registry", "serve", "--port", "0",
         "--data", str(tmp_path / "data")],
        env=cli_env(tmp_path / "home"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        # bounded: a server that never prints the line fails the test instead of hanging it
        assert select.select([proc.stdout], [], [], 60)[0], proc.stderr.readline()
        url = proc.stdout.readline()
        assert re.fullmatch(r"http://127\.0\.0\.1:[1-9]\d*\n", url), url
        url = url.strip()
        assert httpx.get(f"{url}/.well-known/kiln-registry.json").status_code == 200
        assert proc.stderr.readline().startswith(f"kiln registry: listening on {url} (data ")
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert out == "" and "Traceback" not in err, out + err  # the one line, nothing more


def test_a_port_in_use_writes_nothing(tmp_path: Path) -> None:
    """Before, the data folder, its database and a new signing key were made, and only then did
    binding fail: a key no server ever signed with, left beside a registry never served."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = str(taken.getsockname()[1])
        data, home = tmp_path / "data", tmp_path / "home"
        args = ("registry", "serve", "--host", "127.0.0.1", "--port", port, "--data", str(data))
        result = kiln(*args, env=cli_env(home), cwd=tmp_path)
    finally:
        taken.close()
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"kiln: cannot bind 127.0.0.1:{port}: Address already in use"
    ]
    assert not data.exists()


def test_served_marketplace_plugins_install_with_git(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """Claude Code refuses relative sources in a URL-added marketplace: every source is a git
    URL pinned by commit, and a real `git clone` of it gives the skill's files."""
    files = {"SKILL.md": SKILL_MD, "scripts/run.sh": b"#!/bin/sh\necho hi\n", "a/b/c.md": b"deep"}
    body = build_archive(ArchiveContents("notes", files, {"scripts/run.sh"}))
    assert _put(registry, registry.token("acme"), "notes", "1.0.0", body).status_code == 201
    market = httpx.get(f"{registry.url}/.claude-plugin/marketplace.json").json()
    [plugin] = market["plugins"]
    source = plugin["source"]
    assert source["source"] == "url" and source["url"].startswith(registry.url + "/")
    env = {"GIT_TERMINAL_PROMPT": "0", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    # the smart protocol, shallow as Claude Code clones; then the dumb protocol, full
    for folder, argv, extra in (
        ("clone", ["--depth=1"], {}),
        ("dumb", [], {"GIT_SMART_HTTP": "0"}),
    ):
        done = subprocess.run(
            ["git", "clone", "-q", *argv, source["url"], str(tmp_path / folder)],
            env={**env, **extra},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    clone = tmp_path / "clone"
    head = subprocess.run(
        ["git", "-C", str(clone), "rev-parse", "HEAD"], env=env, capture_output=True, text=True
    )
    assert head.stdout.strip() == source["sha"]
    fsck = subprocess.run(
        ["git", "-C", str(clone), "fsck", "--strict"], env=env, capture_output=True
    )
    assert fsck.returncode == 0, fsck.stderr
    for root in (clone, tmp_path / "dumb"):
        got = {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts
        }
        assert got == files, root
    assert (clone / "scripts/run.sh").stat().st_mode & 0o111


@pytest.mark.parametrize("reason", [["leaks", "tokens"], {"why": "x"}, 7, True, None])
def test_a_yank_reason_that_is_no_string_is_refused(registry: LiveRegistry, reason: object) -> None:
    """Before: the reason was stringified (`['leaks', 'tokens']`, `True`) and shown to every
    user that installs the version; now a 422 and the version stays as it was. `null` is no
    reason, as the API table says: the version is yanked without one."""
    token = registry.token("acme")
    _put(registry, token, "notes", "1.0.0", _archive({"SKILL.md": SKILL_MD}))
    url = f"{registry.url}/v1/skills/acme/notes/versions/1.0.0"
    answer = httpx.put(
        f"{url}/status",
        json={"status": "yanked", "reason": reason},
        headers={"Authorization": f"Bearer {token}"},
    )
    doc = httpx.get(url).json()
    if reason is None:
        assert answer.status_code == 200, answer.text
        assert (doc["status"], doc["statusReason"]) == ("yanked", "")
        return
    assert answer.status_code == 422, answer.text
    assert "'reason' must be a string" in answer.json()["errors"][0]
    assert (doc["status"], doc["statusReason"]) == ("active", "")


def test_yank_without_an_exact_version_is_a_usage_line(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """Before: `kiln skills yank acme/notes` sent the version `*` and printed `no version
    acme/notes@*` (exit 1), naming a version the user never typed."""
    token = registry.token("acme")
    _put(registry, token, "notes", "1.0.0", _archive({"SKILL.md": SKILL_MD}))
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    for spec, shown in (("acme/notes", "(no version)"), ("acme/notes@^1", "('^1', not one)")):
        proc = kiln("skills", "yank", spec, "--token", token, env=env, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"kiln: kiln skills yank takes one exact version {shown}")
    assert httpx.get(f"{registry.url}/v1/skills/acme/notes/versions/1.0.0").json()["status"] == (
        "active"
    )


def test_a_range_only_yanked_versions_match_says_they_are_yanked(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """Before: `no version of acme/notes matches '*' (available: 1.0.0)`: listed as available,
    the yanked version read as a contradiction, and its reason was not shown."""
    token = registry.token("acme")
    _put(registry, token, "notes", "1.0.0", _archive({"SKILL.md": SKILL_MD}))
    httpx.put(
        f"{registry.url}/v1/skills/acme/notes/versions/1.0.0/status",
        json={"status": "yanked", "reason": "leaks tokens"},
        headers={"Authorization": f"Bearer {token}"},
    )
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    for args in (("info", "acme/notes"), ("install", "acme/notes@^1", "--yes")):
        proc = kiln("skills", *args, env=env, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert "(versions: 1.0.0 (yanked: leaks tokens) (name a yanked version exactly" in (
            proc.stderr
        ), proc.stderr
    assert kiln("skills", "info", "acme/notes@1.0.0", env=env, cwd=tmp_path).returncode == 0


def _tool(name: str, **fields: object) -> bytes:
    return json.dumps({"name": name, "description": "Does it.", **fields}).encode()


@pytest.mark.parametrize(
    ("tools", "words"),
    [
        ({"tools/a.json": _tool("a")}, "tools/a.json: 'command' must be a non-empty string"),
        ({"tools/a.json": _tool("a", command="../../../../bin/sh")},
         "tools/a.json: command '../../../../bin/sh' resolves outside the skill folder"),
        ({"tools/a.json": _tool("a", command="scripts/missing.py")},
         "tools/a.json: command 'scripts/missing.py' is not a file of the skill"),
        ({"tools/a.json": _tool("run", command="run.py"),
          "tools/b.json": _tool("run", command="run.py")},
         "two tool schemas are named 'run' (one would replace the other)"),
    ],
)  # fmt: skip
def test_a_tool_declaration_no_client_can_run_is_refused_at_publish(
    registry: LiveRegistry, tools: dict[str, bytes], words: str
) -> None:
    """Before: accepted (the registry checked only for a string `name`), then skipped with a
    warning on every machine that installed the skill, or, for two of one name, one of them
    silently replaced by the other."""
    files = {"SKILL.md": SKILL_MD, "run.py": b"print('ok')\n", **tools}
    response = _put(registry, registry.token("acme"), "notes", "1.0.0", _archive(files))
    assert response.status_code == 422, response.text
    assert words in response.json()["errors"], response.json()
    assert _blobs(registry) == []


def test_a_review_of_many_files_says_how_many_it_left_out(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """Before: the review listed 40 files and stopped there without a word (`files: 45`
    above it was the only hint)."""
    files = {"SKILL.md": SKILL_MD, **{f"refs/{i:02}.md": b"x" for i in range(44)}}
    _put(registry, registry.token("acme"), "notes", "1.0.0", _archive(files))
    env = cli_env(tmp_path / "home", KILN_REGISTRY=registry.url)
    info = kiln("skills", "info", "acme/notes", env=env, cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    assert "    … and 5 more (kiln skills info acme/notes --json)" in info.stdout, info.stdout


@pytest.mark.parametrize("status", ["bogus", "Yanked", 5, None])
def test_a_status_outside_the_three_is_a_422(registry: LiveRegistry, status: object) -> None:
    """The API table lists active, deprecated and yanked; before, a string outside them was a
    400 while any other value was a 422, for the same mistake in the same body."""
    token = registry.token("acme")
    _put(registry, token, "notes", "1.0.0", _archive({"SKILL.md": SKILL_MD}))
    url = f"{registry.url}/v1/skills/acme/notes/versions/1.0.0"
    answer = httpx.put(
        f"{url}/status", json={"status": status}, headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 422, answer.text
    assert "'status' must be one of active, deprecated, yanked" in answer.json()["errors"][0]
    assert httpx.get(url).json()["status"] == "active"
