/**
 * The built extension against the real server, with a panel clicked faster than the server
 * answers: two questions sent back to back, New clicked twice, Stop while a question waits
 * its turn (it is not asked: its text goes back to the question box). Then what a loaded session shows (its usage line) and what the diff view keeps.
 */

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { URI } from "vscode-uri";
import { type ChatState, initialState, reduce, usageText } from "../../src/protocol/chatState";
import type { HostToWebview } from "../../src/protocol/messages";
import { host, installVscodeModule } from "./editorHost";
import { type makeWorkspace, serverPids, waitFor } from "./harness";
import { type ActivePanel, scriptedPanel } from "./panelHost";

installVscodeModule();

describe("panel messages one at a time", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;
  const diffsShown: URI[][] = [];

  before(async () => {
    host.commands.set("vscode.diff", (...args: unknown[]) => void diffsShown.push(args.slice(0, 2) as URI[]));
    ({ ws, panel } = await scriptedPanel((home) => [
      { match: "first", text: "First answer." },
      { match: "second", text: "Second answer." },
      { match: "hold", wait_for: join(home, "release") },
      { match: "waiting", text: "Waited answer." },
      { match: "after stop", text: "After stop." },
      { match: "busy now", wait_for: join(home, "busy-release") },
      { match: "propose", text: "Proposing.", tool_calls: [{ name: "edit_file", input: { path: "app.py", old_text: "x = 1", new_text: "x = 2" } }] },
      { match: "app.py", text: "Proposed." },
      // First: after the restart the interrupted question is still the turn's text too.
      { match: "after the crash", text: "Alive again." },
      { match: "after the crash", text: "Alive again." },
      { match: "die now", wait_for: join(home, "never") },
    ]));
  });

  after(async () => {
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  const idleTurns = () => panel.ofType("turn").filter((m) => m.state === "idle" && m.stopReason);
  const answers = () => panel.answer();
  /** What the webview shows after the messages delivered from `from` on. */
  const shown = (from: number): ChatState =>
    panel.delivered.slice(from).reduce((s, m) => reduce(s, m as HostToWebview), initialState());

  test("two questions sent back to back are both answered, in order, in one session", async () => {
    const from = panel.delivered.length;
    panel.send({ type: "prompt", text: "first question" });
    panel.send({ type: "prompt", text: "second question" });
    await waitFor(() => idleTurns().length >= 2, "both turns");
    assert.deepEqual(panel.ofType("error"), []);
    assert.deepEqual(idleTurns().map((m) => m.stopReason), ["end_turn", "end_turn"]);
    const sessions = new Set(panel.delivered.slice(from).filter((m) => m.type === "session").map((m) => m.sessionId));
    assert.equal(sessions.size, 1, `the questions went to ${sessions.size} sessions`);
    assert.equal(answers(), "First answer.Second answer.");
    const view = shown(from);
    assert.deepEqual(view.entries.filter((e) => e.kind === "user").map((e) => (e as { text: string }).text), ["first question", "second question"]);
  });

  test("New clicked twice makes one session", async () => {
    const from = panel.delivered.length;
    panel.send({ type: "newSession" });
    panel.send({ type: "newSession" });
    await waitFor(() => panel.delivered.slice(from).filter((m) => m.type === "session").length >= 2, "both clicks answered");
    const ids = new Set(panel.delivered.slice(from).filter((m) => m.type === "session").map((m) => m.sessionId));
    assert.equal(ids.size, 1, `a double-click made ${ids.size} sessions`);
    assert.deepEqual(panel.ofType("error"), []);
  });

  test("Stop stops the turn and the question waiting behind it; its text goes back to the question box", async () => {
    const turns = idleTurns().length;
    const from = panel.delivered.length;
    panel.send({ type: "prompt", text: "hold on" });
    await waitFor(() => panel.ofType("turn").at(-1)?.state === "running", "turn running");
    const pill = { label: "app.py", uri: URI.file(join(ws.root, "app.py")).toString() };
    panel.send({ type: "prompt", text: "waiting question", context: [pill] });
    panel.send({ type: "cancel" });
    await waitFor(() => idleTurns().length >= turns + 1, "the stopped turn");
    await waitFor(() => panel.delivered.slice(from).some((m) => m.type === "draft"), "the waiting question handed back");
    panel.send({ type: "prompt", text: "after stop" });
    await waitFor(() => idleTurns().length >= turns + 2, "the next question");
    assert.deepEqual(idleTurns().slice(turns).map((m) => m.stopReason), ["cancelled", "end_turn"]);
    assert.doesNotMatch(answers(), /Waited answer/);
    assert.match(answers(), /After stop\.$/);
    const drafts = panel.delivered.slice(from).filter((m) => m.type === "draft");
    assert.deepEqual(drafts, [{ type: "draft", text: "waiting question", context: [pill] }]);
    const asked = shown(from).entries.filter((e) => e.kind === "user").map((e) => (e as { text: string }).text);
    assert.deepEqual(asked, ["hold on", "after stop"]);
    const said = panel.ofType("info").map((m) => m.message as string);
    assert.ok(said.some((m) => /waiting was not asked/.test(m)), said.join("\n"));
  });

  test("New and loading a session while a turn runs are refused with a line saying to stop it first", async () => {
    const turns = idleTurns().length;
    const errors = panel.ofType("error").length;
    const sessions = panel.ofType("session").length;
    panel.send({ type: "prompt", text: "busy now" });
    await waitFor(() => panel.ofType("turn").at(-1)?.state === "running", "turn running");
    panel.send({ type: "newSession" });
    panel.send({ type: "loadSession", sessionId: "20260101-000000-00000000" });
    await waitFor(() => panel.ofType("error").length >= errors + 2, "both refused");
    for (const e of panel.ofType("error").slice(errors)) {
      assert.deepEqual(e, { type: "error", message: "A turn is still running.", hint: "Stop it first." });
    }
    assert.equal(panel.ofType("session").length, sessions, "the session changed under a running turn");
    panel.send({ type: "cancel" });
    await waitFor(() => idleTurns().length >= turns + 1, "the stopped turn");
    assert.equal(idleTurns().at(-1)?.stopReason, "cancelled");
    writeFileSync(join(ws.home, "busy-release"), "");
  });

  test("a stored session loaded again shows its usage line as it was", async () => {
    const first = panel.ofType("session").at(-1)?.sessionId as string;
    const live = usageText(shown(panel.delivered.findIndex((m) => m.type === "session" && m.sessionId === first)).usage!);
    panel.send({ type: "newSession" });
    await waitFor(() => panel.ofType("session").at(-1)?.sessionId !== first, "a new session");
    const from = panel.delivered.length;
    panel.send({ type: "loadSession", sessionId: first });
    await waitFor(() => panel.delivered.slice(from).some((m) => m.type === "sessions"), "the session loaded");
    const view = shown(from);
    assert.ok(view.usage, "the usage line is blank after loading the session");
    assert.equal(usageText(view.usage), live);
  });

  test("the diff view keeps a proposal's texts until it is answered, and none of a closed session", async () => {
    const before = panel.ofType("permission").length;
    panel.send({ type: "prompt", text: "propose a change" });
    const ask = await waitFor(() => panel.ofType("permission")[before], "the edit question");
    const toolCallId = (ask.toolCall as { toolCallId: string }).toolCallId;
    const provider = host.contentProviders.get("kiln-proposal")!;
    panel.send({ type: "openDiff", toolCallId });
    panel.send({ type: "openDiff", toolCallId });
    await waitFor(() => diffsShown.length >= 2, "the diff editor");
    const [left, right] = diffsShown.at(-1)!;
    assert.equal(provider.provideTextDocumentContent(right), "x = 2\n");
    assert.equal(provider.provideTextDocumentContent(diffsShown[0][1]), "", "the first showing's texts are still kept");
    panel.send({ type: "permission", requestId: ask.requestId, optionId: "reject_once" });
    await waitFor(() => panel.ofType("turn").at(-1)?.state === "idle", "turn end");
    assert.deepEqual([provider.provideTextDocumentContent(left), provider.provideTextDocumentContent(right)], ["", ""]);

    // Shown again from the tool card, then the session changes: its texts go.
    panel.send({ type: "openDiff", toolCallId });
    await waitFor(() => diffsShown.length >= 3, "the diff editor again");
    const again = diffsShown.at(-1)![1];
    assert.equal(provider.provideTextDocumentContent(again), "x = 2\n");
    panel.send({ type: "newSession" });
    await waitFor(() => provider.provideTextDocumentContent(again) === "", "the texts dropped with the session");
  });

  test("a server that dies mid-turn: the turn ends, the server restarts, the next question is answered", { skip: process.platform !== "linux" }, async () => {
    const turns = idleTurns().length;
    panel.send({ type: "prompt", text: "die now" });
    await waitFor(() => panel.ofType("turn").at(-1)?.state === "running", "turn running");
    const [pid] = serverPids();
    const restarts = panel.ofType("server").length;
    const from = panel.delivered.length;
    process.kill(pid, "SIGKILL");
    await waitFor(() => panel.ofType("server").slice(restarts).some((m) => m.state === "running"), "running again");
    // One line says the turn stopped with the server: no second stop, no wire-level error.
    const said = panel.delivered.slice(from).filter((m) => m.type === "error" || m.type === "turn");
    assert.deepEqual(said, [{ type: "turn", state: "idle", stopReason: "server stopped" }]);
    panel.send({ type: "prompt", text: "after the crash" });
    await waitFor(() => idleTurns().length > turns + 1, "the next turn");
    assert.equal(idleTurns().at(-1)?.stopReason, "end_turn", JSON.stringify(panel.ofType("error")));
    assert.match(answers(), /Alive again\.$/);
  });

  test("Restart Server pressed while the server restarts after a crash: it runs again", { skip: process.platform !== "linux" }, async () => {
    const [pid] = serverPids();
    const restarts = panel.ofType("server").length;
    process.kill(pid, "SIGKILL");
    await waitFor(() => panel.ofType("server").slice(restarts).some((m) => m.state === "starting"), "the crash seen");
    const restarted = host.commands.get("kiln.restartServer")!();
    await waitFor(() => panel.ofType("server").at(-1)?.state === "running", "running again");
    await restarted;
    await waitFor(() => serverPids().length === 1 || undefined, `one server, not ${serverPids().length}`);
    const before = idleTurns().length;
    panel.send({ type: "prompt", text: "after the crash again" });
    await waitFor(() => idleTurns().length > before, "the next turn");
  });
});
