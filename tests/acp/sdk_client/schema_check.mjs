// Checks a recorded ACP exchange against the protocol's own JSON schema (the stable v1 schema the
// official SDK ships) and against the rules of the protocol that a schema cannot express: who may
// send which method, capability gating, one answer per request, updates only inside a turn.
//
// Two schema levels: the schema as published, and a strict copy that also refuses fields the
// schema does not define. ACP's extensibility rules say implementations MUST NOT add custom
// fields at the root of a protocol type (custom data goes in `_meta`), so an unknown field is a
// defect too.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { isAbsolute, sep } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";

const require = createRequire(import.meta.url);
const SCHEMA_PATH = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json");
export const SCHEMA = JSON.parse(readFileSync(SCHEMA_PATH, "utf8"));

// Methods an agent answers (requests and notifications a client sends) and the reverse.
// `$/cancel_request` is on the "protocol" side: either peer may send it.
const BY_SIDE = { agent: {}, client: {}, protocol: {} };
for (const [name, def] of Object.entries(SCHEMA.$defs)) {
  const method = def["x-method"];
  if (!method || !def["x-side"]) continue;
  const kind = name.endsWith("Response") ? "response" : "params";
  const entry = (BY_SIDE[def["x-side"]][method] ??= {});
  entry[kind] = name;
}
export const AGENT_METHODS = { ...BY_SIDE.agent, ...BY_SIDE.protocol }; // client -> agent
export const CLIENT_METHODS = { ...BY_SIDE.client, ...BY_SIDE.protocol }; // agent -> client

// Update kinds an agent may send outside a prompt turn (state, not turn output).
const ANYTIME_UPDATES = new Set([
  "available_commands_update",
  "current_mode_update",
  "config_option_update",
  "session_info_update",
]);

const INT_RANGES = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint16: [0, 65535],
  uint32: [0, 2 ** 32 - 1],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};

function makeAjv(schema) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  for (const [name, [lo, hi]] of Object.entries(INT_RANGES)) {
    ajv.addFormat(name, { type: "number", validate: (n) => Number.isInteger(n) && n >= lo && n <= hi });
  }
  ajv.addFormat("double", { type: "number", validate: (n) => Number.isFinite(n) });
  ajv.addFormat("uri", { type: "string", validate: (s) => /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(s) });
  ajv.addSchema(schema, "acp");
  return ajv;
}

const APPLICATORS = ["properties", "allOf", "anyOf", "oneOf", "$ref"];

/** A copy of the schema where every schema that describes a whole value (a property's value, an
 * array item) refuses properties none of its subschemas defines. Definitions themselves and
 * `allOf` members are left open: they are parts of a whole (`sessionUpdate` is defined next to
 * the `allOf` that brings in `ContentChunk`), and `unevaluatedProperties` sees through them. */
function strictCopy(schema) {
  const copy = structuredClone(schema);
  const close = (node) => {
    if (!node || typeof node !== "object" || Array.isArray(node)) return;
    const free = "additionalProperties" in node || "patternProperties" in node;
    if (!free && !("unevaluatedProperties" in node) && APPLICATORS.some((k) => k in node)) {
      node.unevaluatedProperties = false;
    }
  };
  const walk = (node) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== "object") return;
    for (const value of Object.values(node.properties ?? {})) close(value);
    if (node.items && !Array.isArray(node.items)) close(node.items);
    for (const value of Object.values(node)) walk(value);
  };
  walk(copy);
  return copy;
}

const PLAIN = makeAjv(SCHEMA);
const STRICT = makeAjv(strictCopy(SCHEMA));
const compiled = new Map();

function validator(ajv, def) {
  const key = `${ajv === STRICT ? "strict" : "plain"}:${def}`;
  if (!compiled.has(key)) {
    const ref = { $ref: `acp#/$defs/${def}` };
    if (ajv === STRICT) ref.unevaluatedProperties = false;
    compiled.set(key, ajv.compile(ref));
  }
  return compiled.get(key);
}

/** Schema problems of `value` as the definition `def`: [] when it conforms. */
export function checkValue(def, value) {
  const plain = validator(PLAIN, def);
  if (!plain(value)) return plain.errors.slice(0, 5).map((e) => describe(e, "schema"));
  const strict = validator(STRICT, def);
  if (!strict(value)) {
    return strict.errors
      .filter((e) => e.keyword === "unevaluatedProperties")
      .slice(0, 5)
      .map((e) => describe(e, "unknown field"));
  }
  return [];
}

function describe(error, level) {
  const where = error.instancePath || "/";
  const extra = error.params?.unevaluatedProperty ? ` (${error.params.unevaluatedProperty})` : "";
  return `${level}: ${where} ${error.message}${extra}`;
}

/**
 * Check one connection's frames, in wire order. A frame is {dir: "c2a" | "a2c", line, msg?,
 * deliberate?}: `line` is the raw text, `msg` its parse; `deliberate` marks a client message a
 * scenario sent malformed on purpose (only the agent's answer to it is checked).
 * Returns a list of {frame, message} violations.
 */
const STATUS_ORDER = { pending: 0, in_progress: 1, completed: 2, failed: 2 };

export function checkConnection(frames) {
  const violations = [];
  const flag = (index, message) => violations.push({ frame: index, message });
  const pending = { c2a: new Map(), a2c: new Map() }; // request id -> method, per sender
  const answered = { c2a: new Set(), a2c: new Set() };
  let caps = null; // the client's capabilities, from its initialize request
  let initialized = false;
  const sessions = new Map(); // session id -> {turn: request id | null, loading, calls}

  const session = (id) => {
    if (!sessions.has(id)) sessions.set(id, { turns: new Set(), loading: null, calls: new Map(), replayed: new Set() });
    return sessions.get(id);
  };

  frames.forEach((frame, i) => {
    const { dir, msg } = frame;
    const other = dir === "c2a" ? "a2c" : "c2a";
    if (msg === undefined || msg === null || typeof msg !== "object" || Array.isArray(msg)) {
      const who = dir === "a2c" ? "agent" : "client";
      return flag(i, `${who} wrote a line that is not a JSON object: ${String(frame.line).slice(0, 120)}`);
    }
    if (msg.jsonrpc !== "2.0") flag(i, `${dir}: jsonrpc must be "2.0"`);
    const isRequest = typeof msg.method === "string" && "id" in msg;
    const isNotification = typeof msg.method === "string" && !("id" in msg);
    const isResponse = !("method" in msg) && "id" in msg;
    const methods = dir === "c2a" ? AGENT_METHODS : CLIENT_METHODS;

    if (isRequest || isNotification) {
      if (isRequest) pending[dir].set(msg.id, msg.method);
      if (dir === "c2a" && isRequest && msg.method === "initialize") caps = msg.params?.clientCapabilities ?? {};
      const spec = methods[msg.method];
      if (frame.deliberate) return;
      if (!spec) {
        if (!msg.method.startsWith("_")) flag(i, `${dir}: ${msg.method} is not a method this side may send`);
        return;
      }
      if (!spec.params) {
        flag(i, `${dir}: ${msg.method} has no params definition`);
      } else {
        for (const problem of checkValue(spec.params, msg.params ?? {})) flag(i, `${dir} ${msg.method} params ${problem}`);
      }
      if (dir === "c2a") {
        const sid = msg.params?.sessionId;
        if (msg.method === "session/prompt" && sid) session(sid).turns.add(msg.id);
        if (msg.method === "session/load" && sid) session(sid).loading = msg.id;
        return;
      }
      // The agent's own requests and notifications.
      if (!initialized) flag(i, `agent sent ${msg.method} before answering initialize`);
      gate(i, msg.method);
      const sid = msg.params?.sessionId;
      if (sid !== undefined && !sessions.has(sid)) flag(i, `agent sent ${msg.method} for session ${sid} it never opened`);
      if (msg.method === "session/update" && sid) return onUpdate(i, session(sid), msg.params.update ?? {});
      // A question or a file operation belongs to the turn that needs it.
      if (sid !== undefined && session(sid).turns.size === 0) flag(i, `agent sent ${msg.method} outside a prompt turn`);
      if (msg.method.startsWith("fs/")) inside(i, msg.method, session(sid).cwd, msg.params?.path);
      if (msg.method === "session/request_permission" && sid !== undefined) {
        // ACP: a call awaiting approval is pending; one already running is not asked about.
        const call = msg.params?.toolCall?.toolCallId;
        const now = session(sid).calls.get(call);
        if (now !== undefined && now !== "pending") flag(i, `permission asked for tool call ${call}, which is ${now}`);
      }
      return;
    }

    if (!isResponse) return flag(i, `${dir}: neither a request, a notification nor a response`);
    const hasResult = "result" in msg;
    const hasError = "error" in msg;
    if (hasResult === hasError) flag(i, `${dir}: a response carries exactly one of result and error`);
    const method = pending[other].get(msg.id);
    if (method === undefined) return flag(i, `${dir}: response to unknown request id ${JSON.stringify(msg.id)}`);
    if (answered[other].has(msg.id)) flag(i, `${dir}: second response to request ${msg.id}`);
    answered[other].add(msg.id);
    if (hasError) {
      for (const problem of checkValue("Error", msg.error)) flag(i, `${dir} ${method} error ${problem}`);
    } else {
      const spec = (dir === "a2c" ? AGENT_METHODS : CLIENT_METHODS)[method];
      if (spec?.response) {
        for (const problem of checkValue(spec.response, msg.result)) flag(i, `${dir} ${method} result ${problem}`);
      }
    }
    if (dir !== "a2c") return;
    if (method === "initialize" && hasResult) initialized = true;
    if (hasResult && (method === "session/new" || method === "session/load") && msg.result) {
      const request = frames.find((f) => f.dir === "c2a" && f.msg?.id === msg.id)?.msg;
      const sid = msg.result.sessionId ?? request?.params?.sessionId;
      if (sid) session(sid).cwd = request?.params?.cwd;
    }
    for (const [sid, state] of sessions) {
      if (state.loading === msg.id) state.loading = null;
      // Several prompts may be pending (a second one is refused while a turn runs): the turn
      // ends with the last answer.
      if (state.turns.delete(msg.id) && state.turns.size === 0) {
        for (const [callId, status] of state.calls) {
          if (status !== "completed" && status !== "failed") {
            flag(i, `prompt answered while tool call ${callId} of ${sid} is still ${status}`);
          }
        }
        state.calls.clear();
      }
    }
  });

  for (const dir of ["c2a", "a2c"]) {
    for (const [id, method] of pending[dir]) {
      if (!answered[dir].has(id)) {
        const who = dir === "c2a" ? "agent" : "client";
        flag(frames.length, `${who} never answered ${method} (id ${JSON.stringify(id)})`);
      }
    }
  }
  return violations;

  /** fs/* paths are absolute (ACP) and, for Kiln, inside the session's folder. */
  function inside(i, method, cwd, path) {
    if (typeof path !== "string" || !isAbsolute(path)) return flag(i, `${method} path ${path} is not absolute`);
    if (cwd && path !== cwd && !path.startsWith(cwd.endsWith(sep) ? cwd : cwd + sep)) {
      flag(i, `${method} of ${path}, outside the session folder ${cwd}`);
    }
  }

  function gate(i, method) {
    const fs = caps?.fs ?? {};
    if (method === "fs/read_text_file" && fs.readTextFile !== true) flag(i, "fs/read_text_file without the client's fs.readTextFile capability");
    if (method === "fs/write_text_file" && fs.writeTextFile !== true) flag(i, "fs/write_text_file without the client's fs.writeTextFile capability");
    if (method.startsWith("terminal/") && caps?.terminal !== true) flag(i, `${method} without the client's terminal capability`);
  }

  function onUpdate(i, state, update) {
    const kind = update.sessionUpdate;
    const inTurn = state.turns.size > 0;
    if (!inTurn && state.loading === null && !ANYTIME_UPDATES.has(kind)) {
      flag(i, `${kind} update outside a prompt turn or a load replay`);
    }
    if (!inTurn && state.loading !== null) {
      // A replay tells a finished story: every call it updates it has announced.
      if (kind === "tool_call") state.replayed.add(update.toolCallId);
      if (kind === "tool_call_update" && !state.replayed.has(update.toolCallId)) {
        flag(i, `replayed tool_call_update for ${update.toolCallId}, which the replay never announced`);
      }
      return;
    }
    if (kind === "tool_call") {
      if (inTurn) state.calls.set(update.toolCallId, update.status ?? "pending");
    } else if (kind === "tool_call_update") {
      if (inTurn && !state.calls.has(update.toolCallId)) {
        flag(i, `tool_call_update for ${update.toolCallId}, which no tool_call of this turn announced`);
      }
      if (inTurn && update.status) {
        // ACP's lifecycle only moves forward: pending -> in_progress -> completed | failed.
        const before = state.calls.get(update.toolCallId);
        if (before !== undefined && (STATUS_ORDER[update.status] ?? 0) < (STATUS_ORDER[before] ?? 0)) {
          flag(i, `tool call ${update.toolCallId} went back from ${before} to ${update.status}`);
        }
        state.calls.set(update.toolCallId, update.status);
      }
    }
  }
}
