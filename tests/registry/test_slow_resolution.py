"""A registry host name that resolves slowly, against the real CLI: the request's deadline
covers name resolution, which happens before any connection exists (so there is no socket to
shut down). The child process runs the real `kiln`; a ``sitecustomize`` on its PYTHONPATH
stands in for a slow DNS server by making ``socket.getaddrinfo`` wait before answering for one
made-up host name (and answer 127.0.0.1 for it), a test harness for the OS resolver. No network:
the registry is a real server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from skills_registry.archive import build_archive, read_dir
from skills_registry.client import RegistryClient
from skills_registry.registry.errors import NotFound, RegistryUnavailable
from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    fails,
    kiln,
    make_skill,
    ok,
)

SLOW_HOST = "registry.slow-dns.test"

RESOLVER = '''
import os
import socket
import time

_real = socket.getaddrinfo


def _slow_getaddrinfo(host, *args, **kwargs):
    """The harness's slow resolver: the made-up host takes SLOW_DNS_SECONDS to resolve."""
    if host in (os.environ["SLOW_DNS_HOST"], os.environ["SLOW_DNS_HOST"].encode()):
        time.sleep(float(os.environ["SLOW_DNS_SECONDS"]))
        host = "127.0.0.1"
    return _real(host, *args, **kwargs)


socket.getaddrinfo = _slow_getaddrinfo
'''


def _env(tmp_path: Path, seconds: float, deadline: str) -> dict[str, str]:
    harness = tmp_path / "slow-dns"
    harness.mkdir(exist_ok=True)
    (harness / "sitecustomize.py").write_text(RESOLVER, encoding="utf-8")
    root = str(Path(__file__).resolve().parents[2])
    return cli_env(
        tmp_path / "home",
        PYTHONPATH=os.pathsep.join([str(harness), root]),
        SLOW_DNS_HOST=SLOW_HOST,
        SLOW_DNS_SECONDS=str(seconds),
        KILN_REGISTRY_DEADLINE=deadline,
    )


def test_a_name_that_resolves_slowly_is_cut_off_at_the_deadline(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """Resolution takes 30 s; the deadline is 2 s: one `cannot reach` line, exit 1, long
    before the resolver answers (without the deadline on resolution the search waited the 30 s
    and then succeeded)."""
    port = registry.url.rsplit(":", 1)[1]
    env = _env(tmp_path, 30, "2")
    started = time.monotonic()
    result = kiln(
        "skills", "search", "pdf", "--registry", f"http://{SLOW_HOST}:{port}",
        env=env, cwd=tmp_path, timeout=90,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    fails(result, 1, f"cannot reach registry http://{SLOW_HOST}:{port}")
    assert f"no connection to {SLOW_HOST} within 2s" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert elapsed < 20, elapsed


def test_a_name_that_resolves_within_the_deadline_still_works(
    registry: LiveRegistry, tmp_path: Path
) -> None:
    """A resolver that takes a second, well inside the deadline: the search goes through."""
    port = registry.url.rsplit(":", 1)[1]
    env = _env(tmp_path, 1, "30")
    result = kiln(
        "skills", "search", "--json", "pdf", "--registry", f"http://{SLOW_HOST}:{port}",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert json.loads(ok(result)) == []


@pytest.mark.parametrize("value", ["0", "-3", "soon", "nan", "inf", "86401", "1e308"])
def test_a_deadline_that_is_no_positive_number_is_bad_usage(
    registry: LiveRegistry, tmp_path: Path, value: str
) -> None:
    """Over a day is refused too: `1e308` was an internal error (OverflowError) once a thread
    waited that long."""
    env = cli_env(tmp_path / "home", KILN_REGISTRY_DEADLINE=value)
    result = kiln("skills", "search", "pdf", "--registry", registry.url, env=env, cwd=tmp_path)
    fails(result, 2, "KILN_REGISTRY_DEADLINE")


def test_a_publish_given_up_during_resolution_never_reaches_the_registry(
    registry: LiveRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller gives up while the name still resolves; when the resolver answers later, the
    request it abandoned must not go out after all (a publish reported as failed that lands
    anyway). In-process, so the abandoned worker outlives the call, as in `kiln lsp`."""
    real = socket.getaddrinfo
    release = threading.Event()

    def slow(host: object, *args: object, **kwargs: object) -> object:
        if host in (SLOW_HOST, SLOW_HOST.encode()):
            release.wait(30)
            host = "127.0.0.1"
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    port = registry.url.rsplit(":", 1)[1]
    archive = build_archive(read_dir(make_skill(tmp_path / "src", "late")))
    client = RegistryClient(f"http://{SLOW_HOST}:{port}", registry.token("acme"), deadline=0.5)
    with client, pytest.raises(RegistryUnavailable, match="no connection to .* within 0.5s"):
        client.publish("acme/late", "1.0.0", archive)
    workers = [t for t in threading.enumerate() if t.name == "kiln-registry-request"]
    assert workers, "the request was not left resolving"
    release.set()  # the resolver answers now
    for worker in workers:
        worker.join(30)
    assert registry.app.state.registry.store.search("late")[0] == []  # type: ignore[attr-defined]
    with RegistryClient(registry.url) as direct, pytest.raises(NotFound):
        direct.skill("acme/late")
