// An editor built on the official ACP SDK's client app, connected to a real `kiln acp` process
// over its stdio. Every line in both directions is recorded as it crosses the pipe, so the
// exchange can be checked against the schema afterwards (schema_check.mjs).
//
// The editor plays Zed's part: it serves fs/read_text_file from its own buffers (unsaved text
// that differs from the disk), keeps fs/write_text_file in those buffers without touching the
// disk, answers permission requests from a list of answers, and answers a pending permission
// request `cancelled` when it cancels the turn (as ACP requires of a client).

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const WAIT_MS = 60_000; // fires only when something is wrong: a loaded machine waits longer

export class Editor {
  constructor({ buffers = {}, answers = [] } = {}) {
    this.buffers = { ...buffers }; // absolute path -> text the editor holds
    this.answers = [...answers]; // optionId | "cancelled" | "hold", one per permission request
    this.updates = []; // {sessionId, update}, in arrival order
    this.permissions = []; // the request_permission params
    this.reads = [];
    this.writes = [];
    this.held = new Map(); // session id -> resolvers of permission requests held open
    this.withdrawn = []; // tool call ids of held permission requests the agent cancelled
    this.cancelled = new Set(); // sessions whose turn this editor cancelled (until the next prompt)
    this.waiters = [];
  }

  app() {
    return acp
      .client({ name: "kiln-conformance" })
      .onNotification(acp.methods.client.session.update, ({ params }) => this.#record(params))
      .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => this.#permission(params, signal))
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => this.#read(params))
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => this.#write(params));
  }

  /** Resolve once `check()` holds; it is re-evaluated at each update and permission request. */
  until(check, what) {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS);
      this.waiters.push(() => {
        if (!check()) return false;
        clearTimeout(timer);
        resolve();
        return true;
      });
    });
  }

  /** The client's side of session/cancel: pending permission requests answer `cancelled`. */
  async cancel(cx, sessionId) {
    this.cancelled.add(sessionId);
    await cx.notify(acp.methods.agent.session.cancel, { sessionId });
    for (const resolve of this.held.get(sessionId) ?? []) resolve({ outcome: { outcome: "cancelled" } });
    this.held.delete(sessionId);
  }

  kinds(sessionId) {
    return this.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update.sessionUpdate);
  }

  #wake() {
    this.waiters = this.waiters.filter((w) => !w());
  }

  #record(params) {
    this.updates.push({ sessionId: params.sessionId, update: params.update });
    this.#wake();
  }

  #permission(params, signal) {
    this.permissions.push(params);
    this.#wake();
    const answer = this.answers.shift() ?? "reject_once";
    // A question that crossed the session/cancel on the wire is pending too: ACP has the client
    // answer every pending question of a cancelled turn `cancelled`.
    if (answer === "cancelled" || this.cancelled.has(params.sessionId)) return { outcome: { outcome: "cancelled" } };
    if (answer === "hold") {
      return new Promise((resolve) => {
        // The agent withdraws the question with `$/cancel_request` (the SDK aborts `signal`):
        // the dialog closes, as an editor's would. The withdrawal may come before the SDK runs
        // this handler (a question that crossed the client's session/cancel): already aborted.
        const withdraw = () => {
          this.withdrawn.push(params.toolCall.toolCallId);
          resolve({ outcome: { outcome: "cancelled" } });
        };
        if (signal?.aborted) return withdraw();
        signal?.addEventListener("abort", withdraw);
        const list = this.held.get(params.sessionId) ?? [];
        list.push(resolve);
        this.held.set(params.sessionId, list);
      });
    }
    return { outcome: { outcome: "selected", optionId: answer } };
  }

  #read({ path, line, limit }) {
    this.reads.push(path);
    let text = this.buffers[path];
    if (text === undefined) {
      try {
        text = readFileSync(path, "utf8");
      } catch {
        throw acp.RequestError.resourceNotFound(path);
      }
    }
    if (line != null || limit != null) {
      const lines = text.split("\n");
      const start = Math.max((line ?? 1) - 1, 0);
      text = lines.slice(start, limit != null ? start + limit : undefined).join("\n");
    }
    return { content: text };
  }

  #write({ path, content }) {
    this.writes.push({ path, content });
    this.buffers[path] = content;
    return {};
  }
}

/** Splits a byte stream into lines and hands each one (without its newline) to `onLine`. */
function lineSplitter(onLine) {
  const decoder = new TextDecoder();
  let rest = "";
  return {
    push(chunk) {
      rest += decoder.decode(chunk, { stream: true });
      let cut;
      while ((cut = rest.indexOf("\n")) >= 0) {
        const line = rest.slice(0, cut);
        rest = rest.slice(cut + 1);
        if (line.trim()) onLine(line);
      }
    },
    end() {
      if (rest.trim()) onLine(rest);
      rest = "";
    },
  };
}

/**
 * Start `kiln acp` and connect the editor's SDK client app to its stdio.
 * Returns {cx, frames, expectInvalid(method), close()}; close() ends stdin and waits for exit.
 */
export function connect(config, editor) {
  const [command, ...args] = config.command;
  const child = spawn(command, args, { env: config.env, stdio: ["pipe", "pipe", "pipe"] });
  const started = performance.now();
  const frames = [];
  let deliberate = []; // methods the scenario sends malformed on purpose, in order
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text) => (stderr += text));
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
    child.on("error", (error) => resolve({ code: null, signal: null, error: String(error) }));
  });

  const record = (dir) => (line) => {
    const frame = { dir, line, ms: Math.round(performance.now() - started) };
    try {
      frame.msg = JSON.parse(line);
    } catch {
      frame.msg = undefined;
    }
    const at = deliberate.indexOf(frame.msg?.method);
    if (dir === "c2a" && at >= 0 && "id" in frame.msg) {
      frame.deliberate = true;
      deliberate.splice(at, 1);
    }
    frames.push(frame);
  };

  const [toSdk, toTap] = Readable.toWeb(child.stdout).tee();
  const fromAgent = lineSplitter(record("a2c"));
  const tapping = (async () => {
    for await (const chunk of toTap) fromAgent.push(chunk);
    fromAgent.end();
  })();

  const toAgent = lineSplitter(record("c2a"));
  const output = new WritableStream({
    write(chunk) {
      toAgent.push(chunk);
      return new Promise((resolve, reject) => child.stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
    },
    close() {
      child.stdin.end();
    },
  });

  const connection = editor.app().connect(acp.ndJsonStream(output, toSdk));
  // A crashed agent fails the requests still waiting for it at once, not at the timeout.
  exited.then(async ({ code, signal }) => {
    await tapping;
    connection.close(new Error(`kiln acp exited (code ${code}, signal ${signal})`));
  });
  return {
    cx: connection.agent,
    frames,
    /** The next request of `method` is malformed on purpose: only the answer is checked. */
    expectInvalid(method) {
      deliberate.push(method);
    },
    async close() {
      const closing = performance.now();
      child.stdin.end();
      const exit = await exited;
      await tapping;
      connection.close();
      const exitMs = Math.round(performance.now() - closing);
      return { frames, stderr, exit: { ...exit, afterStdinClosedMs: exitMs } };
    },
  };
}

/** Run `fn` and return its error as {code, message, data}, or fail if it succeeded. */
export async function errorOf(fn) {
  try {
    await fn();
  } catch (error) {
    return { code: error.code, message: error.message, data: error.data };
  }
  throw new Error("expected a JSON-RPC error");
}
