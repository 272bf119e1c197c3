"""`kiln lsp` says in the editor's log which files its index leaves out, as `kiln index` says
on stderr: the first scan's and the watcher's, each once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e


def _logged(server: RawServer, text: str) -> list[str]:
    return [
        m["params"]["message"]
        for m in server.messages
        if m.get("method") == "window/logMessage" and text in m["params"]["message"]
    ]


async def test_the_editor_log_names_each_file_the_index_leaves_out(
    tmp_path: Path, kiln_home: Path
) -> None:
    """A link out of the workspace, a Git LFS pointer, then a file over the cap written while
    the server watches: the editor's log said nothing, and hover and the agent's search missed
    them unexplained."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def greet():\n    pass\n", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    (root / "shared").symlink_to(tmp_path / "elsewhere")
    (root / "model.py").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:a\n")
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await server.index_until(lambda s: s["state"] == "ready" and s["watching"])
        big = tmp_path / "big.py"  # moved in whole: the watcher never sees it half written
        big.write_text("def big():\n    pass\n" * 60_000)
        big.rename(root / "big.py")
        await server.wait_for(lambda m: bool(_logged(server, "big.py")))
        assert (await server.request("bye", "shutdown"))["result"] is None
    finally:
        await server.close()
    assert _logged(server, "skipped") == [
        "kiln: skipped shared/: the link leads outside the workspace",
        "kiln: skipped model.py: a Git LFS pointer, not its content (run git lfs pull)",
        "kiln: skipped big.py: larger than 1,000,000 bytes (1,200,000)",
    ]
