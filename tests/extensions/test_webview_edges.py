"""The VS Code chat webview in real chromium against a long session, a large file and a user
with an input method: extensions/vscode/test/browser/edges.ts loads the real page and script
(the built ``dist/``) and plays the extension host. Its checks:

- hunks the user unticked stay unticked while other messages redraw the panel (a permission
  card, and a pending deferred edit while the next turn streams), and the answer leaves them out;
- a 20,000-line file with two changes shows its two hunks at once (a full LCS table froze the
  panel for half a minute and took 1.6 GB);
- Enter that confirms an input method's candidate does not send the question;
- while an answer streams, what is already shown is not redrawn (a selection in it survives),
  a long code block grows in place and is highlighted once closed, and the streamed answer is
  drawn exactly as the same answer rendered whole;
- an answer's ``command:`` / ``vscode:`` links are shown as text, web links stay links;
- a panel restored mid-turn (a reloaded window) keeps its transcript but not the old host's turn
  and question: Send works at once, and the panel names the session it shows to the host;
- a reasoning model's thinking is labelled as thinking and keeps its lines, and so does a note
  or error of several lines;
- a long URL, path or one-line command wraps in a narrow panel (a question's command is shown
  whole, nothing scrolls the panel sideways);
- in a 180-pixel panel every button and picker reads whole and a code block's label keeps to a line;
- Escape in the composer stops a running turn (keyboard only), and does nothing when idle;
- ``@`` completes file names with accents, brackets, ``+`` and ``@``;
- 5,000 messages in one burst (a long session loaded again) do not lay the transcript out per
  message; the panel ends at the bottom, follows the next answer, and stays where a user who
  scrolled up is reading;
- nothing leaves the page's origin.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.extensions.test_webview_browser import EXTENSION, _tools, build
from tests.npm import holding

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_webview_edges_in_chromium() -> None:
    node, _ = _tools()
    with holding(EXTENSION):  # the build and what loads it, no other worker rebuilding between
        build(node)
        result = subprocess.run(
            [node, str(EXTENSION / "out" / "browser" / "edges.cjs")],
            cwd=EXTENSION,
            capture_output=True,
            text=True,
            timeout=300,
        )
    lines = result.stdout.strip().splitlines()
    assert lines, result.stderr[-4000:]
    report = json.loads(lines[-1])
    failed = {name: why for name, why in report["checks"].items() if why != "ok"}
    assert not failed, json.dumps(failed, indent=1)
    assert result.returncode == 0
    assert set(report["checks"]) == {
        "ticksSurviveRedraws", "largeDiff", "imeEnter", "streamingKeepsSelection",
        "streamedEqualsWhole", "codeBlockStreams", "linkSchemes", "restoredMidTurn",
        "thinkingKeepsLines", "longWordsWrap", "narrowPanel", "escapeStops", "oddMentions",
        "longTranscript",
    }  # fmt: skip
