"""`kiln/skills/*` against a real registry on a loopback port: search, install, list, remove."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from lsp_server.core import NOT_ALLOWED, NOT_AVAILABLE
from skills_registry.archive import build_archive, read_dir
from skills_registry.client import RegistryClient
from tests.lsp.conftest import running
from tests.registry.conftest import LiveRegistry, make_skill

pytestmark = pytest.mark.e2e


async def test_search_install_list_remove_through_the_language_server(
    workspace: Path, scripted_env: object, registry: LiveRegistry, tmp_path: Path
) -> None:
    folder = make_skill(tmp_path / "src", "tidy-imports", "Sorts and groups Python imports.")
    with RegistryClient(registry.url, registry.token("acme")) as client:
        client.publish("acme/tidy-imports", "1.0.0", build_archive(read_dir(folder)))

    async with running(workspace, scripted_env(["x"])) as editor:  # type: ignore[operator]
        found = await editor.request(
            "kiln/skills/search", {"query": "imports", "registry": registry.url}
        )
        assert "acme/tidy-imports" in str(found)

        # Without "yes" the install is declined and the error carries the review to show.
        try:
            await editor.request(
                "kiln/skills/install", {"spec": "acme/tidy-imports", "registry": registry.url}
            )
            raise AssertionError("installed without confirmation")
        except Exception as exc:  # noqa: BLE001
            assert getattr(exc, "code", None) == NOT_ALLOWED, exc
            assert exc.data["review"]["id"] == "acme/tidy-imports" and exc.data["hint"]  # type: ignore[attr-defined]
        assert not (workspace / ".kiln" / "skills" / "tidy-imports").exists()

        done = await editor.request(
            "kiln/skills/install",
            {"spec": "acme/tidy-imports", "registry": registry.url, "yes": True},
        )
        assert done["id"] == "acme/tidy-imports" and done["version"] == "1.0.0"
        assert (workspace / ".kiln" / "skills" / "tidy-imports" / "SKILL.md").is_file()
        listed = await editor.request("kiln/skills/list", {})
        assert [s["name"] for s in listed["skills"]] == ["tidy-imports"]

        removed = await editor.request("kiln/skills/remove", {"id": "acme/tidy-imports"})
        assert removed["id"] == "acme/tidy-imports"
        assert (await editor.request("kiln/skills/list", {}))["skills"] == []


async def test_without_a_registry_search_and_install_answer_not_available(
    workspace: Path, scripted_env: object
) -> None:
    """PROTOCOL.md §7: -31005 "not available", with a hint saying how to configure one."""
    async with running(workspace, scripted_env(["x"])) as editor:  # type: ignore[operator]
        for method, params in [
            ("kiln/skills/search", {"query": "imports"}),
            ("kiln/skills/install", {"spec": "acme/tidy-imports", "yes": True}),
        ]:
            try:
                await editor.request(method, params)
                raise AssertionError(f"{method} answered without a registry")
            except Exception as exc:  # noqa: BLE001
                assert getattr(exc, "code", None) == NOT_AVAILABLE, exc
                assert "no registry configured" in str(exc)
                assert "KILN_REGISTRY" in exc.data["hint"]  # type: ignore[attr-defined]


async def test_search_limit_is_validated_before_any_registry_request(
    workspace: Path, scripted_env: object, registry: LiveRegistry, tmp_path: Path
) -> None:
    """PROTOCOL.md: `limit` is an integer from 1 to 100, else -32602 and no request is sent
    (before, 0, -1, 10**12 or `true` went to the registry as given)."""
    with RegistryClient(registry.url, registry.token("acme")) as client:
        for name in ("tidy-imports", "sort-imports"):
            folder = make_skill(tmp_path / name, name, "Sorts Python imports.")
            client.publish(f"acme/{name}", "1.0.0", build_archive(read_dir(folder)))
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        watched = f"http://127.0.0.1:{listener.getsockname()[1]}"
        async with running(workspace, scripted_env(["x"])) as editor:  # type: ignore[operator]
            found = await editor.request(
                "kiln/skills/search", {"query": "imports", "limit": 1, "registry": registry.url}
            )
            assert len(found["skills"]) == 1 and found["metadata"]["nextCursor"], found
            for bad in (0, -1, 101, 10**12, True, 1.5, "5"):
                try:
                    await editor.request(
                        "kiln/skills/search", {"query": "x", "limit": bad, "registry": watched}
                    )
                    raise AssertionError(f"limit {bad!r} was accepted")
                except Exception as exc:  # noqa: BLE001
                    assert getattr(exc, "code", None) == -32602, (bad, exc)
                    assert "limit" in str(exc) and "\n" not in str(exc)
        with pytest.raises(BlockingIOError):
            listener.accept()  # the registry was never asked
