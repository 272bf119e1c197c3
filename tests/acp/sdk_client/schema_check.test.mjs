// The checker itself: each rule flags a crafted exchange that breaks it, and passes the same
// exchange without the fault (so a clean report from a real run means something).

import assert from "node:assert/strict";
import { test } from "node:test";
import { checkConnection, checkValue } from "./schema_check.mjs";

const SID = "s1";
const c2a = (msg) => ({ dir: "c2a", line: JSON.stringify(msg), msg: { jsonrpc: "2.0", ...msg } });
const a2c = (msg) => ({ dir: "a2c", line: JSON.stringify(msg), msg: { jsonrpc: "2.0", ...msg } });
const update = (u) => a2c({ method: "session/update", params: { sessionId: SID, update: u } });
const text = (t) => ({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
const call = (extra = {}) => ({
  sessionUpdate: "tool_call",
  toolCallId: "t1",
  title: "read_file: a.py",
  kind: "read",
  status: "in_progress",
  rawInput: { path: "a.py", anything: { goes: [1] } },
  _meta: { tool: "read_file" },
  ...extra,
});
const done = { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" };

/** initialize, session/new, one prompt whose updates are `updates`, answered `stopReason`. */
function exchange({ updates = [update(text("hi"))], stopReason = "end_turn", caps = {}, after = [] } = {}) {
  return [
    c2a({ id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: caps } }),
    a2c({ id: 0, result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [] } }),
    c2a({ id: 1, method: "session/new", params: { cwd: "/w", mcpServers: [] } }),
    a2c({ id: 1, result: { sessionId: SID } }),
    c2a({ id: 2, method: "session/prompt", params: { sessionId: SID, prompt: [{ type: "text", text: "go" }] } }),
    ...updates,
    a2c({ id: 2, result: { stopReason } }),
    ...after,
  ];
}

const messages = (frames) => checkConnection(frames).map((v) => v.message);

test("a conforming exchange has no violations", () => {
  assert.deepEqual(messages(exchange({ updates: [update(text("a")), update(call()), update(done)] })), []);
});

test("a value the schema refuses is flagged", () => {
  assert.match(messages(exchange({ stopReason: "error" }))[0], /session\/prompt result schema/);
  const untitled = call();
  delete untitled.title;
  assert.match(messages(exchange({ updates: [update(untitled), update(done)] }))[0], /session\/update params schema/);
});

test("a field the schema does not define is flagged, at any depth; _meta and rawInput are free", () => {
  assert.match(messages(exchange({ updates: [update(call({ tool: "read_file" })), update(done)] }))[0], /unknown field.*\(tool\)/);
  const nested = { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x", colour: "red" } };
  assert.match(messages(exchange({ updates: [update(nested)] }))[0], /unknown field.*\(colour\)/);
  assert.deepEqual(checkValue("ToolCallUpdate", { toolCallId: "t", _meta: { any: { thing: 1 } }, rawOutput: { x: 1 } }), []);
  assert.match(checkValue("PromptResponse", { stopReason: "end_turn", usage: {} })[0], /unknown field/);
});

test("fs and terminal requests need the client's capability", () => {
  const read = a2c({ id: 0, method: "fs/read_text_file", params: { sessionId: SID, path: "/w/a.py" } });
  const answer = c2a({ id: 0, result: { content: "x" } });
  const frames = (caps) => exchange({ caps, updates: [read, answer] });
  assert.match(messages(frames({}))[0], /without the client's fs.readTextFile capability/);
  assert.deepEqual(messages(frames({ fs: { readTextFile: true } })), []);
  const outside = a2c({ id: 0, method: "fs/read_text_file", params: { sessionId: SID, path: "/etc/hosts" } });
  const outsideFrames = exchange({ caps: { fs: { readTextFile: true } }, updates: [outside, answer] });
  assert.match(messages(outsideFrames)[0], /fs\/read_text_file of \/etc\/hosts, outside the session folder \/w/);
  const term = a2c({ id: 1, method: "terminal/create", params: { sessionId: SID, command: "ls" } });
  const created = c2a({ id: 1, result: { terminalId: "x" } });
  assert.match(messages(exchange({ updates: [term, created] }))[0], /terminal\/create without the client's terminal capability/);
});

test("a permission request outside a turn, and a replay updating an unannounced call, are flagged", () => {
  const ask = a2c({
    id: 3,
    method: "session/request_permission",
    params: { sessionId: SID, toolCall: { toolCallId: "t1" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] },
  });
  const answer = c2a({ id: 3, result: { outcome: { outcome: "cancelled" } } });
  assert.deepEqual(messages(exchange({ updates: [update(call({ status: "pending" })), ask, answer, update(done)] })), []);
  assert.match(messages(exchange({ after: [ask, answer] }))[0], /session\/request_permission outside a prompt turn/);
  const load = (updates) => [
    ...exchange(),
    c2a({ id: 4, method: "session/load", params: { sessionId: SID, cwd: "/w", mcpServers: [] } }),
    ...updates,
    a2c({ id: 4, result: {} }),
  ];
  assert.deepEqual(messages(load([update(call()), update(done)])), []);
  assert.match(messages(load([update(done)]))[0], /replayed tool_call_update for t1, which the replay never announced/);
});

test("turn output after the prompt's answer is flagged; mode changes are not", () => {
  assert.match(messages(exchange({ after: [update(text("late"))] }))[0], /agent_message_chunk update outside a prompt turn/);
  const mode = { sessionUpdate: "current_mode_update", currentModeId: "ask" };
  assert.deepEqual(messages(exchange({ after: [update(mode)] })), []);
});

test("a tool call left running at the answer, or never announced, is flagged", () => {
  assert.match(messages(exchange({ updates: [update(call())] }))[0], /still in_progress/);
  assert.match(messages(exchange({ updates: [update(done)] }))[0], /which no tool_call of this turn announced/);
});

test("unanswered, doubly answered and unknown-id responses, and non-JSON lines are flagged", () => {
  const frames = exchange();
  assert.match(messages(frames.slice(0, -1))[0], /agent never answered session\/prompt/);
  assert.match(messages([...frames, a2c({ id: 2, result: { stopReason: "end_turn" } })])[0], /second response/);
  assert.match(messages([...frames, a2c({ id: 9, result: {} })])[0], /unknown request id 9/);
  assert.match(messages([...frames, { dir: "a2c", line: "Traceback (most recent call last):" }])[0], /not a JSON object/);
});

test("a client message sent malformed on purpose is not blamed; the agent's answer is checked", () => {
  const bad = { ...c2a({ id: 5, method: "session/prompt", params: { sessionId: 7 } }), deliberate: true };
  const answer = a2c({ id: 5, error: { code: -32602, message: "Invalid params" } });
  assert.deepEqual(messages([...exchange(), bad, answer]), []);
  const noMessage = a2c({ id: 5, error: { code: -32602 } });
  assert.match(messages([...exchange(), bad, noMessage])[0], /session\/prompt error schema/);
});

test("a tool call's status only moves forward, and only a pending call is asked about", () => {
  const running = { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" };
  const ask = (id) => a2c({ id, method: "session/request_permission", params: {
    sessionId: SID, toolCall: { toolCallId: "t1", status: "pending" },
    options: [{ optionId: "allow_once", name: "Allow", kind: "allow_once" }] } });
  const answer = (id) => c2a({ id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } });
  const pending = call({ status: "pending" });
  const fine = [update(pending), ask(7), answer(7), update(running), update(done)];
  assert.deepEqual(messages(exchange({ updates: fine })), []);
  const backwards = [update(call()), ask(7), answer(7), update({ ...running, status: "pending" }), update(done)];
  const found = messages(exchange({ updates: backwards }));
  assert.match(found[0], /permission asked for tool call t1, which is in_progress/);
  assert.match(found[1], /tool call t1 went back from in_progress to pending/);
});
