"""An output over the budget that is one long line (a minified file, a JSON reply, a log without
line ends): the preview says to read the saved text with read_file's offset and limit, which
count lines, so the saved file must have lines to page through. It used to hold the one line
as it came: every read of it was the whole line again, over the budget again, and the middle of
the output could never be read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.types import Request
from tests.context.conftest import call, make_session


def saved_path(request: Request) -> str:
    result = request.messages[-1]["content"][0]["content"]
    return str(result.split("is saved at ")[1].split(" — ")[0])


async def test_the_middle_of_a_one_line_output_can_be_read(workspace: Path) -> None:
    (workspace / "bundle.min.js").write_text("".join(f"w{i:05d};" for i in range(15_000)))

    def read_middle(request: Request) -> dict[str, Any]:
        return call("read_file", path=saved_path(request), offset=48, limit=5)

    script = [call("read_file", path="bundle.min.js"), read_middle, "read the middle"]
    session, _ = make_session(workspace, script)
    assert await session.prompt("look at the bundle") == "end_turn"
    middle = session.transcript.messages[4]["content"][0]["content"]
    assert "characters omitted" not in middle and len(middle) < 24_000
    assert "w07000;" in "".join(line.split("\t", 1)[-1] for line in middle.splitlines())
