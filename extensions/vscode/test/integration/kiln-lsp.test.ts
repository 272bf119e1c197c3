/**
 * The extension's protocol module against the real `kiln lsp`: streaming, permissions, an edit
 * applied through `workspace/applyEdit`, and cancel. Nothing of the server is faked; the model
 * is the scripted one that ships in the Python package.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { initialState, reduce } from "../../src/protocol/chatState";
import { CANCELLED, selected } from "../../src/protocol/client";
import { parseHostMessage } from "../../src/protocol/messages";
import type { PermissionRequest } from "../../src/protocol/types";
import { applyWorkspaceEdit } from "../../src/protocol/workspaceEdit";
import { makeWorkspace, type Running, startKiln, waitFor } from "./harness";

const APP = 'def greet(name):\n    return "hello " + name  # café ☕\n';

describe("kiln lsp through the extension's protocol module", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let kiln: Running;
  const asked: PermissionRequest[] = [];
  let answer: (r: PermissionRequest) => Promise<ReturnType<typeof selected>> = async () =>
    selected("allow_once");
  let cancelledAsks = 0;

  before(async () => {
    ws = makeWorkspace({ "app.py": APP });
    const steps = [
      { match: "stream", text: "Hello **world**, this answer streams in pieces." },
      {
        match: "rename",
        text: "I will change the greeting.",
        tool_calls: [
          { name: "edit_file", input: { path: "app.py", old_text: '"hello "', new_text: '"bonjour "' } },
        ],
      },
      { match: "edit_file=1", text: "Changed it." },
      {
        match: "refuse",
        text: "",
        tool_calls: [{ name: "run_command", input: { command: "echo should-not-run" } }],
      },
      { match: "denied", text: "Understood, not running it." },
      {
        match: "cancel me",
        text: "",
        tool_calls: [{ name: "run_command", input: { command: "echo waiting-for-you" } }],
      },
      { match: "cancel", text: "after the cancel" },
      { match: "again", text: "still here" },
      {
        match: "later",
        text: "Proposing.",
        tool_calls: [{ name: "write_file", input: { path: "notes/todo.md", content: "- ship it\n" } }],
      },
      { match: "write_file=1", text: "Proposed; it waits for you." },
    ];
    kiln = await startKiln(ws.root, ws.home, steps, {
      onPermission: (request, token) => {
        asked.push(request);
        token.onCancellationRequested(() => cancelledAsks++);
        return answer(request).then((r) => (token.isCancellationRequested ? CANCELLED : r));
      },
      onApplyEdit: (params) => applyWorkspaceEdit(params.edit),
    });
  });

  after(async () => {
    await kiln?.close();
    assert.doesNotMatch(kiln?.stderr() ?? "", /Traceback/);
    ws?.cleanup();
  });

  test("hello reports the protocol the extension speaks", async () => {
    const hello = await kiln.protocol.hello();
    assert.equal(hello.protocolVersion, 1);
    for (const m of ["kiln/session/prompt", "kiln/session/cancel", "kiln/skills/search", "kiln/index/status"]) {
      assert.ok(hello.capabilities.methods.includes(m), m);
    }
    assert.equal(hello.capabilities.positionEncoding, "utf-16");
  });

  test("an answer streams as updates the chat view renders", async () => {
    const { sessionId } = await kiln.protocol.newSession();
    const result = await kiln.protocol.prompt(sessionId, [{ type: "text", text: "stream please" }]);
    assert.equal(result.stopReason, "end_turn");
    const mine = kiln.updates.filter((u) => u.sessionId === sessionId);
    const chunks = mine.filter((u) => u.update.sessionUpdate === "agent_message_chunk");
    assert.ok(chunks.length >= 1);
    // Every update, wrapped as the host wraps it, passes the webview schema and renders.
    let state = reduce(initialState(), { type: "session", sessionId, title: "t" });
    for (const n of mine) {
      const parsed = parseHostMessage({ type: "update", sessionId: n.sessionId, update: n.update });
      assert.ok(parsed.ok, JSON.stringify(n.update));
      if (parsed.ok) state = reduce(state, parsed.message);
    }
    const agent = state.entries.filter((e) => e.kind === "agent");
    assert.deepEqual(
      agent.map((e) => (e as { text: string }).text).join(""),
      "Hello **world**, this answer streams in pieces.",
    );
    assert.ok(state.usage && state.usage.inputTokens + state.usage.cacheReadTokens > 0);
    const { sessions } = await kiln.protocol.listSessions();
    assert.ok(sessions.some((s) => s.sessionId === sessionId && s.title.includes("stream")));
  });

  test("an approved edit arrives as workspace/applyEdit and lands on disk", async () => {
    answer = async () => selected("allow_once");
    const before = asked.length;
    const { sessionId } = await kiln.protocol.newSession({ mode: "ask", editMode: "ask" });
    const result = await kiln.protocol.prompt(sessionId, "rename the greeting");
    const errors = kiln.updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "error");
    assert.equal(result.stopReason, "end_turn", JSON.stringify(errors));
    const request = asked[before];
    assert.equal(request.sessionId, sessionId);
    assert.equal(request.toolCall.kind, "edit");
    const diff = request.toolCall.content?.find((c) => c.type === "diff");
    assert.ok(diff, "the permission request carries the diff to show");
    assert.equal(diff.path, join(ws.root, "app.py"));
    assert.equal(diff.oldText, APP);
    assert.equal(diff.newText, APP.replace('"hello "', '"bonjour "'));
    assert.equal(kiln.applied.length, 1);
    // Non-ASCII on the edited line: positions must be UTF-16, as the protocol module applies them.
    assert.equal(readFileSync(join(ws.root, "app.py"), "utf8"), APP.replace('"hello "', '"bonjour "'));
    assert.deepEqual(result.filesModified, ["app.py"]);
  });

  test("a deferred edit waits in kiln/edit/list until accepted, then creates the file", async () => {
    const before = kiln.applied.length;
    const { sessionId, editMode } = await kiln.protocol.newSession({ mode: "auto-edit", editMode: "deferred" });
    assert.equal(editMode, "deferred");
    const result = await kiln.protocol.prompt(sessionId, "write it later");
    assert.equal(result.stopReason, "end_turn");
    assert.equal(kiln.applied.length, before, "nothing applied during the turn");
    const { edits } = await kiln.protocol.listEdits(sessionId);
    assert.equal(edits.length, 1);
    assert.equal(edits[0].path, "notes/todo.md");
    assert.equal(edits[0].newText, "- ship it\n");
    const done = await kiln.protocol.resolveEdit(edits[0].proposalId, "accept");
    assert.equal(done.outcome, "applied");
    assert.equal(readFileSync(join(ws.root, "notes", "todo.md"), "utf8"), "- ship it\n");
    assert.deepEqual((await kiln.protocol.listEdits(sessionId)).edits, []);
  });

  test("a denied command does not run", async () => {
    answer = async () => selected("reject_once");
    const { sessionId } = await kiln.protocol.newSession({ mode: "ask" });
    const result = await kiln.protocol.prompt(sessionId, "refuse this");
    assert.equal(result.stopReason, "end_turn");
    const failed = kiln.updates.filter(
      (u) => u.sessionId === sessionId && u.update.sessionUpdate === "tool_call_update",
    );
    assert.equal(failed.at(-1)?.update.status, "failed");
    assert.match(JSON.stringify(failed.at(-1)?.update.content), /permission denied/);
  });

  test("cancel ends the turn and withdraws the open permission request", async () => {
    let release!: () => void;
    answer = () => new Promise((resolve) => (release = () => resolve(selected("allow_once"))));
    const { sessionId } = await kiln.protocol.newSession({ mode: "ask" });
    const before = asked.length;
    const turn = kiln.protocol.prompt(sessionId, "cancel me");
    await waitFor(() => asked.length > before, "the permission request");
    await kiln.protocol.cancel(sessionId);
    const result = await turn;
    assert.equal(result.stopReason, "cancelled");
    await waitFor(() => cancelledAsks > 0, "$/cancelRequest for the open ask");
    release();
    const listed = (await kiln.protocol.listSessions()).sessions;
    assert.equal(listed.find((s) => s.sessionId === sessionId)?.busy, false);
    answer = async () => selected("allow_once");
    const again = await kiln.protocol.prompt(sessionId, "again");
    assert.equal(again.stopReason, "end_turn");
  });

  test("bad input comes back as a typed error with the server's hint", async () => {
    await assert.rejects(kiln.protocol.setMode("no-such-session", "bogus"), (err: Error & { code?: number }) => {
      assert.equal(err.name, "KilnRpcError");
      assert.ok(typeof err.code === "number");
      return true;
    });
    const { sessionId } = await kiln.protocol.newSession();
    await assert.rejects(kiln.protocol.setMode(sessionId, "bogus"), (err: Error & { hint?: string }) => {
      assert.match(err.message, /unknown mode/);
      assert.match(err.hint ?? "", /ask/);
      return true;
    });
  });
});
