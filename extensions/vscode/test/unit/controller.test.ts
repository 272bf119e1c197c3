import { beforeEach, describe, expect, test } from "vitest";
import * as vscode from "vscode";
import { ChatController } from "../../src/host/controller";
import { ProposalDiffs } from "../../src/host/diff";
import { type HostToWebview, parseHostMessage } from "../../src/protocol/messages";
import { Peer, Token } from "../stubs/peer";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { executed, opened, reset, settings, shown, user } from "../stubs/vscode";

let posted: HostToWebview[];
let peer: Peer;
let diffs: ProposalDiffs;
let chat: ChatController;

/** The host validates nothing it sends at run time; the tests check every message instead. */
function post(message: HostToWebview): void {
  const parsed = parseHostMessage(JSON.parse(JSON.stringify(message)));
  expect(parsed, JSON.stringify(message)).toMatchObject({ ok: true });
  posted.push(message);
}
const ofType = <T extends HostToWebview["type"]>(t: T) =>
  posted.filter((m): m is Extract<HostToWebview, { type: T }> => m.type === t);
const tick = () => new Promise((r) => setTimeout(r, 0));

const DIFF = { type: "diff", path: "/w/app.py", oldText: "old\n", newText: "new\n" };

beforeEach(() => {
  reset();
  posted = [];
  peer = new Peer()
    .on("kiln/session/list", () => ({ sessions: [{ sessionId: "s1", title: "hi", updatedAt: "x", cwd: "/w", mode: "ask", live: true, busy: false }] }))
    .on("kiln/session/new", () => ({ sessionId: "s1", cwd: "/w", mode: "ask", editMode: "ask" }))
    .on("kiln/edit/list", () => ({ edits: [] }));
  diffs = new ProposalDiffs();
  chat = new ChatController(post, diffs);
});

describe("chat controller", () => {
  test("attach listens for updates and permission requests and fills the history", async () => {
    chat.attach(peer);
    await tick();
    expect(peer.listening.sort()).toEqual(["kiln/session/requestPermission", "kiln/session/update"]);
    expect(ofType("server").at(-1)).toEqual({ type: "server", state: "running" });
    expect(ofType("sessions").at(-1)?.sessions[0].sessionId).toBe("s1");
  });

  test("a prompt creates a session, streams updates and ends the turn", async () => {
    chat.attach(peer);
    peer.on("kiln/session/prompt", async (p) => {
      peer.notify("kiln/session/update", { sessionId: p.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hi" } } });
      peer.notify("kiln/session/update", { sessionId: "someone-else", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "no" } } });
      return { stopReason: "end_turn", usage: {}, filesModified: [] };
    });
    await chat.handle({ type: "prompt", text: "hello" });
    expect(peer.calls("kiln/session/prompt")).toEqual([{ sessionId: "s1", prompt: [{ type: "text", text: "hello" }] }]);
    const kinds = posted.map((m) => m.type).filter((t) => t !== "sessions" && t !== "config" && t !== "server");
    expect(kinds).toEqual(["session", "userMessage", "turn", "update", "turn", "pendingEdits"]);
    expect(ofType("turn").at(-1)).toEqual({ type: "turn", state: "idle", stopReason: "end_turn" });
    expect(chat.running).toBe(false);
  });

  test("a failed prompt shows the server's message and hint and frees the composer", async () => {
    chat.attach(peer);
    peer.on("kiln/session/prompt", () => {
      throw { code: -32602, message: "prompt must be a non-empty list", data: { hint: "send text" } };
    });
    await chat.handle({ type: "prompt", text: "x" });
    expect(ofType("error").at(-1)).toEqual({ type: "error", message: "prompt must be a non-empty list", hint: "send text" });
    expect(ofType("turn").at(-1)).toEqual({ type: "turn", state: "idle", stopReason: "error" });
  });

  test("Stop sends kiln/session/cancel for the running turn", async () => {
    chat.attach(peer);
    let finish!: (v: unknown) => void;
    peer.on("kiln/session/prompt", () => new Promise((r) => (finish = r)));
    peer.on("kiln/session/cancel", () => finish({ stopReason: "cancelled", usage: {}, filesModified: [] }));
    const turn = chat.handle({ type: "prompt", text: "long job" });
    await tick();
    await tick();
    expect(chat.running).toBe(true);
    await chat.handle({ type: "cancel" });
    await turn;
    expect(peer.calls("kiln/session/cancel")).toEqual([{ sessionId: "s1" }]);
    expect(ofType("turn").at(-1)).toEqual({ type: "turn", state: "idle", stopReason: "cancelled" });
  });

  test("a permission request waits for the user's button and returns the chosen option", async () => {
    chat.attach(peer);
    const answer = peer.request("kiln/session/requestPermission", {
      sessionId: "s1",
      toolCall: { toolCallId: "t1", title: "edit_file app.py", kind: "edit", content: [DIFF] },
      options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }],
    });
    await tick();
    const asked = ofType("permission")[0];
    expect(asked.toolCall.title).toBe("edit_file app.py");
    await chat.handle({ type: "permission", requestId: asked.requestId, optionId: "allow_once" });
    expect(await answer).toEqual({ outcome: { outcome: "selected", optionId: "allow_once" } });
    expect(ofType("permissionClosed")).toEqual([{ type: "permissionClosed", requestId: asked.requestId, reason: "answered" }]);
    // A second click on the same request changes nothing.
    await chat.handle({ type: "permission", requestId: asked.requestId, optionId: "reject_once" });
    expect(ofType("permissionClosed")).toHaveLength(1);
  });

  test("a reopened panel hears whether a turn runs and gets the open questions again", async () => {
    chat.attach(peer);
    void peer.request("kiln/session/requestPermission", {
      sessionId: "s1",
      toolCall: { toolCallId: "t7", title: "run_command: make" },
      options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }],
    });
    await tick();
    posted = [];
    await chat.handle({ type: "ready" });
    expect(ofType("turn")).toEqual([{ type: "turn", state: "idle" }]);
    expect(ofType("permission").map((p) => p.toolCall.title)).toEqual(["run_command: make"]);
    await chat.handle({ type: "permission", requestId: ofType("permission")[0].requestId, optionId: "allow_once" });
    posted = [];
    await chat.handle({ type: "ready" });
    expect(ofType("permission")).toEqual([]);
  });

  test("a panel restored after a reload continues the session it shows", async () => {
    const loaded: unknown[] = [];
    peer.on("kiln/session/load", (p) => (loaded.push(p), { sessionId: "s-old", mode: "ask", editMode: "ask" }));
    chat.attach(peer);
    await tick();
    await chat.handle({ type: "ready", sessionId: "s-old" });
    expect(chat.sessionId).toBe("s-old");
    expect(loaded).toEqual([{ sessionId: "s-old", replay: false }]);
  });

  test("a question asked while the panel is hidden is announced; Show opens the panel", async () => {
    let visible = false;
    chat = new ChatController(post, diffs, () => visible);
    chat.attach(peer);
    user.buttons.push("Show");
    void peer.request("kiln/session/requestPermission", {
      sessionId: "s1",
      toolCall: { toolCallId: "t8", title: "run_command: make test" },
      options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }],
    });
    await tick();
    expect(shown.map((s) => s.message)).toEqual(["Kiln is waiting for your answer: allow run_command: make test?"]);
    await tick();
    expect(executed.map((e) => e.command)).toContain("kiln.chat.focus");
    // On screen, the card in the panel is enough.
    visible = true;
    void peer.request("kiln/session/requestPermission", {
      sessionId: "s1",
      toolCall: { toolCallId: "t9", title: "run_command: make lint" },
      options: [],
    });
    await tick();
    expect(shown).toHaveLength(1);
    expect(ofType("permission")).toHaveLength(2);
  });

  test("when the server withdraws a request ($/cancelRequest) the prompt is closed as cancelled", async () => {
    chat.attach(peer);
    const token = new Token();
    const answer = peer.request(
      "kiln/session/requestPermission",
      { sessionId: "s1", toolCall: { toolCallId: "t2", title: "run_command: make" }, options: [] },
      token,
    );
    await tick();
    token.cancel();
    expect(await answer).toEqual({ outcome: { outcome: "cancelled" } });
    expect(ofType("permissionClosed").at(-1)).toMatchObject({ reason: "cancelled" });
    expect(chat.pendingPermissions).toBe(0);
  });

  test("a server that stops answers open requests as cancelled and ends the turn", async () => {
    chat.attach(peer);
    const answer = peer.request("kiln/session/requestPermission", {
      sessionId: "s1",
      toolCall: { toolCallId: "t3", title: "x" },
      options: [],
    });
    await tick();
    chat.detach("failed", "the server crashed");
    expect(await answer).toEqual({ outcome: { outcome: "cancelled" } });
    expect(ofType("server").at(-1)).toEqual({ type: "server", state: "failed", message: "the server crashed" });
    await chat.handle({ type: "prompt", text: "still there?" });
    expect(ofType("error").at(-1)).toMatchObject({ message: "The Kiln server is not running." });
  });

  test("Show diff opens VS Code's diff editor with the current text and the proposal", async () => {
    chat.attach(peer);
    peer.notify("kiln/session/update", { sessionId: "s1", update: { sessionUpdate: "tool_call_update", toolCallId: "t4", content: [DIFF] } });
    await chat.handle({ type: "openDiff", toolCallId: "t4" });
    const call = executed.find((e) => e.command === "vscode.diff")!;
    const [left, right, title] = call.args as [vscode.Uri, vscode.Uri, string];
    expect(left.scheme).toBe("kiln-proposal");
    expect(diffs.provideTextDocumentContent(left)).toBe("old\n");
    expect(diffs.provideTextDocumentContent(right)).toBe("new\n");
    expect(title).toBe("app.py ↔ Kiln proposal");
    await chat.handle({ type: "openDiff", toolCallId: "unknown" });
    expect(ofType("error").at(-1)?.message).toMatch(/no longer available/);
  });

  test("loading a session resets the view before the replayed updates arrive", async () => {
    chat.attach(peer);
    peer.on("kiln/session/load", (p) => {
      peer.notify("kiln/session/update", { sessionId: p.sessionId, update: { sessionUpdate: "user_message_chunk", content: { type: "text", text: "earlier" } } });
      return { sessionId: p.sessionId, cwd: "/w", mode: "ask", messages: 2, replayed: 1 };
    });
    await chat.handle({ type: "loadSession", sessionId: "s0" });
    const order = posted.filter((m) => m.type === "session" || m.type === "update");
    expect(order.map((m) => m.type)).toEqual(["session", "update"]);
    expect(peer.calls("kiln/session/load")).toEqual([{ sessionId: "s0", replay: true }]);
    expect(chat.sessionId).toBe("s0");
  });

  test("after a restart the current session is loaded again without replay", async () => {
    chat.attach(peer);
    await chat.handle({ type: "newSession" });
    peer.on("kiln/session/load", (p) => ({ sessionId: p.sessionId, cwd: "/w", mode: "ask", messages: 0, replayed: 0 }));
    chat.detach("stopped");
    const again = new Peer().on("kiln/session/list", () => ({ sessions: [] }));
    again.on("kiln/session/load", (p) => ({ ...p, cwd: "/w", mode: "ask", messages: 0, replayed: 0 }));
    chat.attach(again);
    await tick();
    expect(again.calls("kiln/session/load")).toEqual([{ sessionId: "s1", replay: false }]);
  });

  test("deferred edits are listed after the turn, can be diffed, applied or discarded", async () => {
    chat.attach(peer);
    const pending = [{ proposalId: "pr1", sessionId: "s1", toolCallId: "t5", path: "app.py", oldText: "a\n", newText: "b\n" }];
    peer.on("kiln/edit/list", () => ({ edits: [...pending] }));
    peer.on("kiln/session/prompt", () => ({ stopReason: "end_turn", usage: {}, filesModified: [] }));
    peer.on("kiln/edit/resolve", (p) => {
      pending.length = 0;
      return { proposalId: p.proposalId, outcome: p.decision === "accept" ? "applied" : "rejected" };
    });
    await chat.handle({ type: "prompt", text: "change it later" });
    expect(ofType("pendingEdits").at(-1)).toEqual({
      type: "pendingEdits",
      edits: [{ proposalId: "pr1", toolCallId: "t5", path: "app.py", oldText: "a\n", newText: "b\n" }],
    });
    await chat.handle({ type: "openDiff", toolCallId: "t5" });
    const [left, right] = executed.find((e) => e.command === "vscode.diff")!.args as [vscode.Uri, vscode.Uri];
    expect([diffs.provideTextDocumentContent(left), diffs.provideTextDocumentContent(right)]).toEqual(["a\n", "b\n"]);
    await chat.handle({ type: "resolveEdit", proposalId: "pr1", decision: "accept" });
    expect(peer.calls("kiln/edit/resolve")).toEqual([{ proposalId: "pr1", decision: "accept" }]);
    expect(ofType("pendingEdits").at(-1)).toEqual({ type: "pendingEdits", edits: [] });
  });

  test("a deferred edit applied with some hunks sends the kept text to kiln/edit/resolve", async () => {
    chat.attach(peer);
    await chat.handle({ type: "newSession" });
    peer.on("kiln/edit/resolve", (p) => ({ proposalId: p.proposalId, outcome: "applied" }));
    await chat.handle({ type: "resolveEdit", proposalId: "pr3", decision: "accept", newText: "kept\n" });
    expect(peer.calls("kiln/edit/resolve")).toEqual([{ proposalId: "pr3", decision: "accept", newText: "kept\n" }]);
    expect(ofType("error")).toEqual([]);
  });

  test("the model picker is filled from kiln/models/list, with the server's note", async () => {
    peer.on("kiln/hello", () => ({ protocolVersion: 1, serverVersion: "1", root: "/w", capabilities: {}, config: { model: "gpt-4.1" } }));
    peer.on("kiln/models/list", () => ({
      provider: "openai",
      current: "gpt-4.1",
      source: "known",
      models: [{ id: "gpt-4.1", source: "configured" }, { id: "gpt-4o", source: "known" }],
      note: "the server did not list its models (refused); showing known models",
    }));
    chat.attach(peer);
    for (let i = 0; i < 10 && ofType("models").length === 0; i++) await tick();
    expect(ofType("models").at(-1)).toEqual({
      type: "models",
      ids: ["gpt-4.1", "gpt-4o"],
      note: "the server did not list its models (refused); showing known models",
    });
  });

  test("a server without kiln/models/list leaves the picker free text, with no error", async () => {
    chat.attach(peer);
    for (let i = 0; i < 5; i++) await tick();
    expect(ofType("models")).toEqual([]);
    expect(ofType("error")).toEqual([]);
  });

  test("a stale deferred edit is reported with the server's words", async () => {
    chat.attach(peer);
    await chat.handle({ type: "newSession" });
    peer.on("kiln/edit/resolve", () => {
      throw { code: -31003, message: "app.py changed since the edit was proposed", data: { hint: "ask Kiln to redo it" } };
    });
    await chat.handle({ type: "resolveEdit", proposalId: "pr2", decision: "accept" });
    expect(ofType("error").at(-1)).toEqual({ type: "error", message: "app.py changed since the edit was proposed", hint: "ask Kiln to redo it" });
  });

  test("starting another session frees the previous one on the server", async () => {
    chat.attach(peer);
    peer.on("kiln/session/close", () => ({ closed: true }));
    peer.on("kiln/session/prompt", () => ({ stopReason: "end_turn", usage: {}, filesModified: [] }));
    await chat.handle({ type: "newSession" });
    await chat.handle({ type: "newSession" }); // nothing asked in it yet: kept
    expect(peer.calls("kiln/session/new").length).toBe(1);
    await chat.handle({ type: "prompt", text: "hi" });
    await chat.handle({ type: "newSession" });
    expect(peer.calls("kiln/session/close")).toEqual([{ sessionId: "s1" }]);
  });

  test("a server speaking another protocol version is reported", async () => {
    peer.on("kiln/hello", () => ({ protocolVersion: 2, serverVersion: "9", root: "/w", capabilities: {}, config: {} }));
    chat.attach(peer);
    await tick();
    await tick();
    expect(ofType("error").at(-1)?.message).toMatch(/protocol version 2; this extension speaks 1/);
  });

  test("Set Mode sends the picked permission and edit modes for the session", async () => {
    chat.attach(peer);
    await chat.newSession();
    peer.on("kiln/session/setMode", (p) => ({ mode: p.mode, editMode: p.editMode }));
    user.picks.push((items) => items.find((i) => i.label === "auto-edit"), (items) => items.find((i) => i.label === "deferred"));
    await chat.pickMode();
    expect(peer.calls("kiln/session/setMode")).toEqual([{ sessionId: "s1", mode: "auto-edit", editMode: "deferred" }]);
    expect(shown.at(-1)?.message).toBe("Kiln: mode auto-edit, edits deferred.");
  });

  test("openLocation opens a workspace file at the line, and nothing outside the workspace", async () => {
    const root = mkdtempSync(join(tmpdir(), "kiln-open-"));
    writeFileSync(join(root, "app.py"), "x = 1\n");
    settings["__folders"] = [root];
    await chat.handle({ type: "openLocation", path: join(root, "app.py"), line: 7 });
    expect(opened[0].uri.path).toBe(join(root, "app.py"));
    expect((opened[0].options as { selection: vscode.Range }).selection.start.line).toBe(6);
    for (const path of ["/etc/passwd", join(root, "..", "elsewhere.py"), "../../etc/passwd"]) {
      await chat.handle({ type: "openLocation", path });
      await chat.handle({ type: "openFile", path });
    }
    await chat.handle({ type: "openFile", path: "missing.py" });
    expect(opened).toHaveLength(1);
    expect(posted.filter((m) => m.type === "error")).toHaveLength(7);
    await chat.handle({ type: "openFile", path: "app.py", line: 1 });
    expect(opened.at(-1)?.uri.path).toBe(join(root, "app.py"));
    delete settings["__folders"];
  });

  test("slash commands: skills load through kiln/skills/use, built-ins call their methods", async () => {
    chat.attach(peer);
    peer
      .on("kiln/skills/use", (p) => ({
        name: p.name,
        description: "Fill in PDF forms.",
        block: { type: "resource", resource: { uri: `kiln-skill:${p.name}`, text: "skill body" } },
      }))
      .on("kiln/session/prompt", () => ({ stopReason: "end_turn", usage: {}, filesModified: [] }))
      .on("kiln/session/compact", () => ({ compacted: false }))
      .on("kiln/context/show", () => ({ messages: 4, turns: 1, steps: 2, contextWindow: 1000, filesModified: ["a.py"] }))
      .on("kiln/session/setMode", (p) => ({ mode: p.mode ?? "ask", editMode: p.editMode ?? "ask" }));
    await chat.handle({
      type: "command",
      name: "pdf",
      args: "fill the form",
      context: [{ label: "@form.pdf", uri: "file:///w/form.pdf" }],
    });
    expect(peer.calls("kiln/session/prompt")[0]).toEqual({
      sessionId: "s1",
      prompt: [
        { type: "resource", resource: { uri: "kiln-skill:pdf", text: "skill body" } },
        { type: "text", text: "fill the form" },
        { type: "resource_link", uri: "file:///w/form.pdf", name: "form.pdf" },
      ],
    });
    await chat.handle({ type: "command", name: "compact", args: "" });
    expect(ofType("info").at(-1)?.message).toBe("Nothing to compact yet.");
    await chat.handle({ type: "command", name: "context", args: "" });
    expect(ofType("info").at(-1)?.message).toMatch(/4 messages, 1 turns, 2 steps, window 1000 tokens; files modified: a\.py/);
    await chat.handle({ type: "command", name: "mode", args: "deferred" });
    expect(peer.calls("kiln/session/setMode").at(-1)).toEqual({ sessionId: "s1", mode: undefined, editMode: "deferred" });
    expect(ofType("config").at(-1)).toEqual({ type: "config", mode: "ask", editMode: "deferred", model: "" });
    await chat.handle({ type: "command", name: "clear", args: "" });
    expect(ofType("session").at(-1)?.title).toBe("New session");
  });

  test("@ completions come from the server as menu items with pills", async () => {
    chat.attach(peer);
    peer.on("kiln/complete/mentions", () => ({
      items: [{ kind: "symbol", label: "load", path: "pkg/c.py", uri: "file:///w/pkg/c.py", line: 3, endLine: 5, detail: "function · pkg/c.py:3" }],
      indexed: true,
    }));
    await chat.handle({ type: "complete", id: 7, trigger: "@", query: "lo" });
    expect(ofType("completions").at(-1)).toEqual({
      type: "completions",
      id: 7,
      items: [
        {
          kind: "symbol",
          label: "load",
          detail: "function · pkg/c.py:3",
          insert: "@load ",
          context: { label: "@load", uri: "file:///w/pkg/c.py", range: { startLine: 3, endLine: 5 } },
        },
      ],
    });
  });
});
