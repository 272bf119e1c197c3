import { describe, expect, test } from "vitest";
import { applyUpdate, type ChatState, initialState, reduce, usageText } from "../../src/protocol/chatState";
import type { HostToWebview } from "../../src/protocol/messages";

const run = (messages: HostToWebview[], start: ChatState = initialState()) => messages.reduce(reduce, start);
const chunk = (text: string) => ({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });

describe("chat state", () => {
  test("streaming chunks join into one answer, split by a tool call", () => {
    const s = run([
      { type: "session", sessionId: "s", title: "" },
      { type: "update", sessionId: "s", update: chunk("Let me ") },
      { type: "update", sessionId: "s", update: chunk("look.") },
      {
        type: "update",
        sessionId: "s",
        update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "read_file app.py", kind: "read", status: "in_progress", locations: [{ path: "/w/app.py", line: 3 }] },
      },
      {
        type: "update",
        sessionId: "s",
        update: { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [{ type: "content", content: { type: "text", text: "file body" } }] },
      },
      { type: "update", sessionId: "s", update: chunk("Done.") },
    ]);
    expect(s.entries).toEqual([
      { kind: "agent", text: "Let me look." },
      {
        kind: "tool",
        id: "t1",
        title: "read_file app.py",
        toolKind: "read",
        status: "completed",
        output: "file body",
        diffs: [],
        locations: [{ path: "/w/app.py", line: 3 }],
      },
      { kind: "agent", text: "Done." },
    ]);
  });

  test("updates of another session are not shown", () => {
    const s = run([
      { type: "session", sessionId: "mine", title: "" },
      { type: "update", sessionId: "other", update: chunk("not mine") },
    ]);
    expect(s.entries).toEqual([]);
  });

  test("plan, usage and the cache-hit line", () => {
    const s = run([
      { type: "session", sessionId: "s", title: "" },
      {
        type: "update",
        sessionId: "s",
        update: { sessionUpdate: "plan", entries: [{ content: "read", status: "completed" }, { content: "edit", status: "in_progress" }] },
      },
      {
        type: "update",
        sessionId: "s",
        update: {
          sessionUpdate: "usage_update",
          used: 1000,
          cost: { amount: 0.0123, currency: "USD" },
          _meta: { inputTokens: 200, cacheReadTokens: 600, cacheWriteTokens: 200, outputTokens: 50 },
        },
      },
    ]);
    expect(s.plan).toEqual([
      { content: "read", status: "completed" },
      { content: "edit", status: "in_progress" },
    ]);
    expect(usageText(s.usage!)).toBe("in 1,000 · out 50 · cache 60% hit · $0.0123");
  });

  test("the usage line sums the session's steps; a loaded session's totals replace it", () => {
    const usage = (meta: Record<string, unknown>, amount: number) => ({
      type: "update" as const,
      sessionId: "s",
      update: { sessionUpdate: "usage_update", cost: { amount }, _meta: meta },
    });
    const s = run([
      { type: "session", sessionId: "s", title: "" },
      usage({ inputTokens: 100, outputTokens: 10 }, 0.01),
      usage({ inputTokens: 20, cacheReadTokens: 100, outputTokens: 5 }, 0.015),
    ]);
    expect(usageText(s.usage!)).toBe("in 220 · out 15 · cache 45% hit · $0.0150");
    const loaded = reduce(s, usage({ inputTokens: 7, outputTokens: 3, totals: true }, 0.5));
    expect(usageText(loaded.usage!)).toBe("in 7 · out 3 · cache 0% hit · $0.5000");
  });

  test("permissions come and go; an idle turn clears them and notes an unusual stop", () => {
    let s = run([
      { type: "session", sessionId: "s", title: "" },
      { type: "turn", state: "running" },
      {
        type: "permission",
        requestId: "p1",
        sessionId: "s",
        toolCall: {
          toolCallId: "t9",
          title: "edit_file app.py",
          _meta: { reason: "edits need approval" },
          content: [{ type: "diff", path: "/w/app.py", oldText: "a", newText: "b" }],
        },
        options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }],
      },
    ]);
    expect(s.running).toBe(true);
    expect(s.permissions).toEqual([
      {
        requestId: "p1",
        title: "edit_file app.py",
        reason: "edits need approval",
        detail: "",
        toolCallId: "t9",
        hasDiff: true,
        diffs: [{ path: "/w/app.py", oldText: "a", newText: "b" }],
        fromExternal: false,
        options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }],
      },
    ]);
    s = reduce(s, { type: "turn", state: "idle", stopReason: "cancelled" });
    expect(s.permissions).toEqual([]);
    expect(s.running).toBe(false);
    expect(s.entries.at(-1)).toEqual({ kind: "notice", level: "info", text: "Stopped: cancelled" });
  });

  test("a new session starts empty but keeps the history list and server state", () => {
    let s = run([
      { type: "server", state: "running" },
      { type: "sessions", sessions: [{ sessionId: "a", title: "first" }] },
      { type: "session", sessionId: "a", title: "first" },
      { type: "userMessage", text: "hi", references: [] },
    ]);
    s = reduce(s, { type: "session", sessionId: "b", title: "New session" });
    expect(s.entries).toEqual([]);
    expect(s.sessions).toHaveLength(1);
    expect(s.server.state).toBe("running");
  });

  test("status, compaction and memory proposals are shown as notices", () => {
    const s = run([
      { type: "update", sessionId: "s", update: { sessionUpdate: "status", text: "step limit reached (50)" } },
      { type: "update", sessionId: "s", update: { sessionUpdate: "compaction", tier: 3 } },
      { type: "update", sessionId: "s", update: { sessionUpdate: "memory_proposal", text: "tests run with pytest -q", fromExternal: false, turn: 2 } },
    ]);
    expect(s.entries.map((e) => (e as { text: string }).text)).toEqual([
      "step limit reached (50)",
      "The conversation was compacted to fit the context window.",
      "Kiln proposes to remember: tests run with pytest -q",
    ]);
  });

  test("errors and refusals become notices; unknown kinds are ignored", () => {
    const s0 = initialState();
    expect(applyUpdate(s0, { sessionUpdate: "something_new" })).toBe(s0);
    const s = run([
      { type: "update", sessionId: "s", update: { sessionUpdate: "error", message: "rate limited", hint: "wait a minute" } },
      { type: "update", sessionId: "s", update: { sessionUpdate: "refusal", tool: "run_command", reason: "outside workspace" } },
    ]);
    expect(s.entries).toEqual([
      { kind: "notice", level: "error", text: "rate limited — wait a minute" },
      { kind: "notice", level: "info", text: "Refused run_command: outside workspace" },
    ]);
  });
});
