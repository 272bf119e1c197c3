// `node run.mjs CONFIG.json` runs one conformance scenario against `kiln acp` and prints a JSON
// report on stdout: what the client observed (`result`), every frame of every connection, and
// the schema/protocol violations found in them. The pytest side (tests/acp/test_acp_sdk*.py)
// starts the scripted model server, writes the config, and asserts on the report.
//
// CONFIG: {scenario, command: [...], env: {...}, workspace, params: {...}}

import { readFileSync } from "node:fs";
import * as acp from "@agentclientprotocol/sdk";
import { Editor, connect, errorOf } from "./editor.mjs";
import { checkConnection } from "./schema_check.mjs";

const CAPS = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
};
const NO_FS = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };
const CLIENT_INFO = { name: "kiln-conformance", title: "Kiln conformance client", version: "1.0.0" };

function initialize(cx, { caps = CAPS, version = acp.PROTOCOL_VERSION } = {}) {
  return cx.request(acp.methods.agent.initialize, {
    protocolVersion: version,
    clientCapabilities: caps,
    clientInfo: CLIENT_INFO,
  });
}

function newSession(cx, cwd, meta) {
  return cx.request(acp.methods.agent.session.new, { cwd, mcpServers: [], ...(meta ? { _meta: meta } : {}) });
}

function prompt(cx, sessionId, text) {
  return cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
}

const SCENARIOS = {
  /** Version negotiation and capabilities, a session, the session list. */
  async handshake(run, { workspace, params }) {
    const result = { initialize: {}, errors: {} };
    const first = run.open(new Editor());
    result.initialize[acp.PROTOCOL_VERSION] = await initialize(first.cx);
    result.newSession = await newSession(first.cx, workspace);
    if (result.initialize[acp.PROTOCOL_VERSION].agentCapabilities?.sessionCapabilities?.list) {
      result.list = await first.cx.request(acp.methods.agent.session.list, { cwd: workspace });
    }
    result.errors.secondInitialize = await errorOf(() => initialize(first.cx));
    // Each other version on a fresh connection, whose first request comes before initialize.
    for (const version of params.otherVersions ?? []) {
      const conn = run.open(new Editor());
      result.errors.beforeInitialize ??= await errorOf(() => newSession(conn.cx, workspace));
      result.initialize[version] = await initialize(conn.cx, { version });
    }
    return result;
  },

  /** One turn: streamed chunks, usage, the stop reason. */
  async prompt(run, { workspace, params }) {
    const editor = new Editor({ buffers: params.buffers });
    const { cx } = run.open(editor);
    await initialize(cx, { caps: params.fs === false ? NO_FS : CAPS });
    const { sessionId } = await newSession(cx, workspace, params.sessionMeta);
    const blocks = params.prompt ?? [{ type: "text", text: params.text ?? "hello" }];
    const response = await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: blocks });
    return { sessionId, response, updates: editor.updates, reads: editor.reads, writes: editor.writes, permissions: editor.permissions };
  },

  /** Several prompts in one session (params.texts), one after the other; the text each got. */
  async prompts(run, { workspace, params }) {
    const editor = new Editor();
    const { cx } = run.open(editor);
    await initialize(cx);
    const { sessionId } = await newSession(cx, workspace);
    const responses = [];
    const replies = [];
    for (const text of params.texts) {
      const since = editor.updates.length;
      responses.push(await prompt(cx, sessionId, text));
      const said = editor.updates.slice(since).filter((u) => u.update.sessionUpdate === "agent_message_chunk");
      replies.push(said.map((u) => u.update.content.text).join(""));
    }
    return { sessionId, responses, replies, updates: editor.updates };
  },

  /** Two sessions of one connection running turns at the same time. */
  async two_sessions(run, { workspace }) {
    const editor = new Editor();
    const { cx } = run.open(editor);
    await initialize(cx);
    const one = (await newSession(cx, workspace)).sessionId;
    const two = (await newSession(cx, workspace)).sessionId;
    const [first, second] = await Promise.all([prompt(cx, one, "first session"), prompt(cx, two, "second session")]);
    const text = (sid) =>
      editor.updates
        .filter((u) => u.sessionId === sid && u.update.sessionUpdate === "agent_message_chunk")
        .map((u) => u.update.content.text)
        .join("");
    return { responses: [first, second], texts: [text(one), text(two)], updates: editor.updates };
  },

  /** A turn whose tool call asks permission; the answers come from params.answers. */
  async permission(run, { workspace, params }) {
    const editor = new Editor({ answers: params.answers, buffers: params.buffers });
    const { cx } = run.open(editor);
    await initialize(cx, { caps: params.fs === false ? NO_FS : CAPS });
    const { sessionId } = await newSession(cx, workspace, params.sessionMeta);
    const response = await prompt(cx, sessionId, params.text ?? "edit it");
    return { sessionId, response, updates: editor.updates, permissions: editor.permissions, reads: editor.reads, writes: editor.writes, withdrawn: editor.withdrawn };
  },

  /** session/cancel mid-turn (at a plan update, or while a permission request is open). */
  async cancel(run, { workspace, params }) {
    const editor = new Editor({ answers: params.answers });
    const { cx } = run.open(editor);
    await initialize(cx);
    const { sessionId } = await newSession(cx, workspace);
    const turn = prompt(cx, sessionId, "start something slow");
    if (params.at === "permission") {
      await editor.until(() => editor.permissions.length > 0, "a permission request");
    } else {
      await editor.until(() => editor.kinds(sessionId).includes(params.at ?? "plan"), params.at ?? "plan");
    }
    const busy = await errorOf(() => prompt(cx, sessionId, "a second prompt while the first runs"));
    await editor.cancel(cx, sessionId);
    const response = await turn;
    const atResponse = editor.updates.length;
    // A round trip after the answer: anything the agent still had queued for the turn would
    // arrive before this answer (and the schema check flags it as outside the turn).
    await cx.request(acp.methods.agent.session.list, { cwd: workspace });
    editor.cancelled.delete(sessionId); // a new turn: its questions are asked afresh
    const after = await prompt(cx, sessionId, "are you still there");
    return { sessionId, response, busy, after, updatesAfterResponse: editor.updates.slice(atResponse), updates: editor.updates, permissions: editor.permissions, withdrawn: editor.withdrawn, writes: editor.writes };
  },

  /** ACP's `$/cancel_request` on a running session/prompt (what the SDK sends when a request's
   * cancellationSignal fires): the prompt must still be answered, and promptly. */
  async cancel_request(run, { workspace }) {
    const editor = new Editor();
    const { cx } = run.open(editor);
    await initialize(cx);
    const { sessionId } = await newSession(cx, workspace);
    const abort = new AbortController();
    const request = { sessionId, prompt: [{ type: "text", text: "start something slow" }] };
    const turn = cx.request(acp.methods.agent.session.prompt, request, { cancellationSignal: abort.signal });
    await editor.until(() => editor.kinds(sessionId).includes("plan"), "plan");
    abort.abort();
    const outcome = await turn.then(
      (response) => ({ response }),
      (error) => ({ error: { code: error.code, message: error.message } }),
    );
    const after = await prompt(cx, sessionId, "are you still there");
    // Cancelled before it is even sent: the SDK sends the cancel right behind the request.
    const early = new AbortController();
    early.abort();
    const overtaken = await cx
      .request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "aborted at once" }] }, { cancellationSignal: early.signal })
      .then((response) => ({ response }), (error) => ({ error: { code: error.code, message: error.message } }));
    return { sessionId, ...outcome, after, overtaken, updates: editor.updates };
  },

  /** The editor closes the agent's stdin while a tool call runs (as a client shutting down
   * does) and keeps reading: the prompt must still be answered, its calls closed first. */
  async hangup(run, { workspace, params }) {
    const editor = new Editor();
    const conn = run.open(editor);
    await initialize(conn.cx);
    const { sessionId } = await newSession(conn.cx, workspace, params.sessionMeta);
    const turn = prompt(conn.cx, sessionId, params.text ?? "run something long").then(
      (response) => ({ response }),
      (error) => ({ error: { code: error.code, message: error.message } }),
    );
    await editor.until(() => editor.updates.some((u) => u.update.status === "in_progress"), "a running tool call");
    await run.finish(conn);
    return { sessionId, ...(await turn), updates: editor.updates };
  },

  /** A turn in one process, then session/load in a fresh one: replay, then a new turn. */
  async load(run, { workspace, params }) {
    const first = new Editor();
    const one = run.open(first);
    await initialize(one.cx, { caps: NO_FS });
    const { sessionId } = await newSession(one.cx, workspace, params.sessionMeta);
    const blocks = params.prompt ?? [{ type: "text", text: params.text ?? "summarise notes.txt" }];
    const firstResponse = await one.cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: blocks });
    await run.finish(one);

    const second = new Editor();
    const two = run.open(second);
    const init = await initialize(two.cx, { caps: NO_FS });
    const loaded = await two.cx.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] });
    const replayed = second.updates.slice();
    const response = await prompt(two.cx, sessionId, "still there?");
    return { sessionId, loadSession: init.agentCapabilities?.loadSession, live: first.updates, firstResponse, loaded, replayed, response, updates: second.updates };
  },

  /** session/set_mode to each advertised mode, an unknown mode, then a turn in the last one. */
  async set_mode(run, { workspace, params }) {
    const editor = new Editor({ answers: params.answers });
    const { cx } = run.open(editor);
    await initialize(cx);
    const created = await newSession(cx, workspace);
    const { sessionId } = created;
    const switched = {};
    for (const mode of params.modes) {
      switched[mode] = await cx.request(acp.methods.agent.session.setMode, { sessionId, modeId: mode });
    }
    const unknown = await errorOf(() => cx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "warp-speed" }));
    const response = await prompt(cx, sessionId, params.text ?? "edit it");
    const listed = await cx.request(acp.methods.agent.session.list, { cwd: workspace });
    return { sessionId, modes: created.modes, switched, unknown, response, listed, permissions: editor.permissions, writes: editor.writes, updates: editor.updates };
  },

  /** A session with the editor's MCP servers (params.mcpServers), one turn; then the same
   * servers refused in malformed variants (params.malformed), each answered -32602. */
  async mcp(run, { workspace, params }) {
    const editor = new Editor({ answers: params.answers });
    const conn = run.open(editor);
    const { cx } = conn;
    const init = await initialize(cx);
    const created = await cx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: params.mcpServers });
    const response = await prompt(cx, created.sessionId, params.text ?? "add two numbers");
    const malformed = [];
    for (const mcpServers of params.malformed ?? []) {
      conn.expectInvalid("session/new");
      malformed.push(await errorOf(() => cx.request("session/new", { cwd: workspace, mcpServers })));
    }
    const listed = await cx.request(acp.methods.agent.session.list, { cwd: workspace });
    return {
      mcpCapabilities: init.agentCapabilities?.mcpCapabilities,
      sessionId: created.sessionId,
      response,
      malformed,
      listed,
      updates: editor.updates,
      permissions: editor.permissions,
    };
  },

  /** Error answers: unknown session, bad params, unknown method, authenticate. */
  async errors(run, { workspace }) {
    const conn = run.open(new Editor());
    const { cx } = conn;
    const init = await initialize(cx);
    const ghost = "20990101-000000-deadbeef";
    const errors = {};
    errors.promptUnknown = await errorOf(() => prompt(cx, ghost, "hi"));
    errors.setModeUnknown = await errorOf(() => cx.request(acp.methods.agent.session.setMode, { sessionId: ghost, modeId: "ask" }));
    errors.loadUnknown = await errorOf(() => cx.request(acp.methods.agent.session.load, { sessionId: ghost, cwd: workspace, mcpServers: [] }));
    errors.relativeCwd = await errorOf(() => newSession(cx, "relative/dir"));
    conn.expectInvalid("session/prompt");
    errors.promptWithoutBlocks = await errorOf(() => cx.request("session/prompt", { sessionId: ghost }));
    conn.expectInvalid("session/new");
    errors.cwdNotAString = await errorOf(() => cx.request("session/new", { cwd: 42, mcpServers: [] }));
    conn.expectInvalid("session/teleport");
    errors.unknownMethod = await errorOf(() => cx.request("session/teleport", {}));
    errors.authenticate = await errorOf(() => cx.request(acp.methods.agent.authenticate, { methodId: "password" }));
    const { sessionId } = await newSession(cx, workspace);
    errors.imageBlock = await errorOf(() =>
      cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }),
    );
    errors.audioBlock = await errorOf(() =>
      cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "audio", data: "AAAA", mimeType: "audio/wav" }] }),
    );
    const response = await prompt(cx, sessionId, "still serving?");
    return { authMethods: init.authMethods, promptCapabilities: init.agentCapabilities?.promptCapabilities, errors, response };
  },
};

async function main() {
  const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
  const scenario = SCENARIOS[config.scenario];
  if (!scenario) throw new Error(`unknown scenario ${config.scenario}`);
  const open = [];
  const connections = [];
  const run = {
    open(editor) {
      const conn = connect(config, editor);
      open.push(conn);
      return conn;
    },
    async finish(conn) {
      open.splice(open.indexOf(conn), 1);
      connections.push(await conn.close());
    },
  };
  let result;
  let failure = null;
  try {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("scenario timed out")), config.timeoutMs ?? 60_000);
    });
    result = await Promise.race([scenario(run, { workspace: config.workspace, params: config.params ?? {} }), timeout]);
    clearTimeout(timer);
  } catch (error) {
    failure = String(error?.stack ?? error);
  }
  for (const conn of [...open]) await run.finish(conn);
  const violations = connections.flatMap((c, n) =>
    checkConnection(c.frames).map((v) => ({ connection: n, ...v, line: c.frames[v.frame]?.line?.slice(0, 400) })),
  );
  process.stdout.write(JSON.stringify({ scenario: config.scenario, failure, result, violations, connections }));
}

await main();
