"""Anonymous file previews of many large archives at once, against `kiln registry serve` as a
real process on 127.0.0.1, its peak memory read from /proc.

A preview unpacks the whole archive (up to 32 MB from a few KB of gzip). Before, each request
unpacked in its own worker thread, so 24 previews of 24 skills at once held 24 archives, and
each thread's malloc arena kept its peak after: the server's peak grew by ~800 MB, and with the
pool's 40 threads by more. Now a pool of two threads unpacks, so the peak is the cache of eight
archives and two being unpacked, however many requests come at once.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from skills_registry.archive import ArchiveContents, build_archive
from tests.registry.conftest import cli_env, kiln, ok, serving

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SKILLS = 24
MB = 1024 * 1024


def _peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _server_pid() -> int:
    """The pid of the `kiln registry serve` this test started (a child of this process)."""
    children = [
        int(pid)
        for task in Path("/proc/self/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]
    serving_pids = [
        pid
        for pid in children
        if b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    ]
    assert len(serving_pids) == 1, serving_pids
    return serving_pids[0]


def test_concurrent_previews_of_many_archives_hold_a_bounded_memory(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    minted = kiln("registry", "token", "--data", str(data), "--namespace", "evil",
                  env=cli_env(home), cwd=tmp_path)  # fmt: skip
    headers = {"Authorization": f"Bearer {ok(minted).strip()}"}
    with serving(data, home) as port:
        url = f"http://127.0.0.1:{port}"
        for i in range(SKILLS):  # 24 MB each, ~25 KB of gzip
            name = f"zeros-{i}"
            files = {"SKILL.md": f"---\nname: {name}\ndescription: z\n---\n".encode()}
            files.update({f"f{j}.bin": bytes([i]) * (8 * MB - 1) for j in range(3)})
            archive = build_archive(ArchiveContents(name, files))
            published = httpx.put(f"{url}/v1/skills/evil/{name}/versions/1.0.0",
                                  content=archive, headers=headers, timeout=120)  # fmt: skip
            assert published.status_code == 201, published.text[:200]
        pid = _server_pid()
        before = _peak_kb(pid)
        answers: list[int] = []

        def preview(i: int) -> None:
            path = f"/v1/skills/evil/zeros-{i}/versions/1.0.0/files/SKILL.md"
            answers.append(httpx.get(url + path, timeout=120).status_code)

        threads = [threading.Thread(target=preview, args=(i,)) for i in range(SKILLS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert answers == [200] * SKILLS
        grown = (_peak_kb(pid) - before) // 1024
        # eight cached archives (192 MB) and two being unpacked; before: ~800 MB
        assert grown < 450, f"the server's peak memory grew by {grown} MB"
