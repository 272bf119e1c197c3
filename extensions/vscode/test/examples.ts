import type { HostToWebview, WebviewToHost } from "../src/protocol/messages";

/** One valid example of every message kind, so adding a kind without a test fails below. */
export const HOST_EXAMPLES: HostToWebview[] = [
  { type: "session", sessionId: "s1", title: "New session" },
  { type: "session", sessionId: null, title: "" },
  { type: "update", sessionId: "s1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } } },
  { type: "userMessage", text: "why?", references: [{ uri: "file:///a.py", label: "a.py:1-3" }] },
  {
    type: "permission",
    requestId: "p1",
    sessionId: "s1",
    toolCall: { toolCallId: "t1", title: "run_command: ls", kind: "execute" },
    options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }],
  },
  { type: "permissionClosed", requestId: "p1", reason: "cancelled" },
  { type: "turn", state: "running" },
  { type: "turn", state: "idle", stopReason: "end_turn" },
  { type: "sessions", sessions: [{ sessionId: "s1", title: "t", updatedAt: "2026-01-01T00:00:00Z" }] },
  { type: "server", state: "failed", message: "python3 not found" },
  { type: "error", message: "boom", hint: "do this" },
  { type: "pendingEdits", edits: [{ proposalId: "a1", toolCallId: "t1", path: "app.py" }] },
  {
    type: "completions",
    id: 1,
    items: [{ kind: "file", label: "calc.py", insert: "@calc.py ", context: { label: "@calc.py", uri: "file:///w/calc.py" } }],
  },
  { type: "config", mode: "ask", editMode: "ask", model: "" },
  { type: "addContext", item: { label: "@calc.py:1-2", uri: "file:///w/calc.py", range: { startLine: 1, endLine: 2 } } },
  { type: "info", message: "Copied to the clipboard." },
  { type: "server", state: "no-folder" },
];

export const WEBVIEW_EXAMPLES: WebviewToHost[] = [
  { type: "ready" },
  { type: "prompt", text: "hello" },
  { type: "cancel" },
  { type: "permission", requestId: "p1", optionId: "allow_once" },
  { type: "newSession" },
  { type: "listSessions" },
  { type: "loadSession", sessionId: "s1" },
  { type: "openDiff", toolCallId: "t1" },
  { type: "resolveEdit", proposalId: "a1", decision: "accept" },
  { type: "openLocation", path: "/w/a.py", line: 3 },
  { type: "command", name: "pdf", args: "fill the form", context: [{ label: "@a.py", uri: "file:///w/a.py" }] },
  { type: "complete", id: 1, trigger: "@", query: "cal" },
  { type: "openFile", path: "calc.py", line: 3 },
  { type: "codeAction", action: "copy", code: "x = 1", lang: "python", target: "" },
  { type: "setMode", mode: "auto-edit" },
  { type: "setModel", model: "claude-sonnet-4-5" },
  { type: "openFolder" },
];
