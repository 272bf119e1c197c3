/**
 * "Kiln: Stop the Current Turn" run while the chat's first session is being made (slow while
 * the server starts): it did nothing, and the question was asked once the session came. Now
 * the question is not asked: its text goes back to the question box, as for a question
 * waiting behind a turn. The built extension against the real server, behind a relay
 * (tests/extensions/hold_proxy.py) that holds the `kiln/session/new` answer.
 */

import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { URI } from "vscode-uri";
import { host, installVscodeModule } from "./editorHost";
import { makeWorkspace, python, waitFor } from "./harness";
import { type ActivePanel, activatePanel } from "./panelHost";

installVscodeModule();

const PROXY = join(__dirname, "..", "..", "..", "..", "tests", "extensions", "hold_proxy.py");

describe("Stop before the first session exists", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;
  let hold: string;

  before(async () => {
    ws = makeWorkspace({ "app.py": "x = 1\n" });
    hold = join(ws.home, "hold");
    mkdirSync(hold);
    const script = join(ws.home, "script.json");
    writeFileSync(script, JSON.stringify([{ match: "second", text: "Second answer." }, { text: "MODEL-RAN" }]));
    host.workspaceFolders = [{ uri: URI.file(ws.root), name: "ws", index: 0 }];
    const command = [python(), PROXY, hold, "kiln/session/new", "--", python(), "-m", "lsp_server", "lsp"];
    host.settings = {
      kiln: { server: { command, env: { KILN_PROVIDER: "scripted", KILN_SCRIPT: script, KILN_HOME: ws.home } } },
    };
    panel = await activatePanel();
    await waitFor(() => panel.ofType("server").some((m) => m.state === "running"), "server running");
  });

  after(async () => {
    if (hold && !existsSync(join(hold, "release"))) writeFileSync(join(hold, "release"), "");
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  test("the question is not asked; its text goes back to the question box", async () => {
    panel.send({ type: "prompt", text: "first question" });
    await waitFor(() => existsSync(join(hold, "asked")), "kiln/session/new asked");
    await host.commands.get("kiln.stop")!();
    await waitFor(() => panel.ofType("draft").length > 0, "the question handed back");
    assert.deepEqual(panel.ofType("draft"), [{ type: "draft", text: "first question", context: [] }]);
    writeFileSync(join(hold, "release"), "");
    await waitFor(() => panel.ofType("session").some((m) => m.sessionId), "the session made meanwhile");
    await new Promise((r) => setTimeout(r, 500));
    assert.doesNotMatch(panel.answer(), /MODEL-RAN/);
    assert.deepEqual(panel.ofType("userMessage"), []);
    // The session made meanwhile is the chat's: the next question is asked in it.
    const sid = panel.ofType("session").at(-1)?.sessionId;
    panel.send({ type: "prompt", text: "second question" });
    await waitFor(() => panel.ofType("turn").some((m) => m.state === "idle" && m.stopReason), "the second turn");
    assert.equal(panel.answer(), "Second answer.");
    assert.equal(panel.ofType("session").at(-1)?.sessionId, sid);
    assert.deepEqual(panel.ofType("error"), []);
  });
});
