/**
 * Starts the real `kiln lsp` (`python -m lsp_server lsp`) with the in-package scripted model
 * and a temp KILN_HOME, and connects the extension's own protocol module to it over stdio with
 * `vscode-jsonrpc`. The test plays the editor: it answers permissions and applies edits.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import { atMost } from "../../src/protocol/atMost";
import { KilnProtocol, type ProtocolHandlers, type RpcConnection } from "../../src/protocol/client";
import type { UpdateNotification } from "../../src/protocol/types";

export interface Running {
  protocol: KilnProtocol;
  connection: MessageConnection;
  updates: UpdateNotification[];
  applied: unknown[];
  stderr: () => string;
  close: () => Promise<void>;
}

export function python(): string {
  return process.env.KILN_PYTHON || "python3";
}

export function makeWorkspace(files: Record<string, string>): { root: string; home: string; cleanup: () => void } {
  const base = mkdtempSync(join(tmpdir(), "kiln-vscode-"));
  const root = join(base, "ws");
  const home = join(base, "home");
  mkdirSync(root, { recursive: true });
  mkdirSync(home, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text, "utf8");
  // Retried: a server process may still be writing its session or index files under .kiln as
  // the test ends (ENOTEMPTY while a file is created between the listing and the rmdir).
  const cleanup = () => rmSync(base, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  return { root, home, cleanup };
}

function serverEnv(home: string, script: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(ANTHROPIC_|OPENAI_|KILN_)/.test(k)) env[k] = v;
  }
  return { ...env, KILN_HOME: home, KILN_PROVIDER: "scripted", KILN_SCRIPT: script, PYTHONUNBUFFERED: "1" };
}

export async function startKiln(
  root: string,
  home: string,
  steps: unknown[],
  handlers: Omit<ProtocolHandlers, "onUpdate"> = {},
  options: Record<string, unknown> = {},
  extraEnv: Record<string, string> = {},
): Promise<Running> {
  const script = join(home, `script-${Date.now()}-${Math.random().toString(16).slice(2)}.json`);
  writeFileSync(script, JSON.stringify(steps), "utf8");
  const child: ChildProcess = spawn(python(), ["-m", "lsp_server", "lsp"], {
    cwd: root,
    env: { ...serverEnv(home, script), ...extraEnv },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  await spawned;
  const connection = createMessageConnection(
    new StreamMessageReader(child.stdout!),
    new StreamMessageWriter(child.stdin!),
  );
  const updates: UpdateNotification[] = [];
  const applied: unknown[] = [];
  const protocol = new KilnProtocol(connection as unknown as RpcConnection, {
    ...handlers,
    onUpdate: (n) => updates.push(n),
    onApplyEdit: handlers.onApplyEdit
      ? async (p) => {
          applied.push(p);
          return handlers.onApplyEdit!(p);
        }
      : undefined,
  });
  connection.onRequest("window/workDoneProgress/create", () => null);
  connection.onRequest("workspace/configuration", () => [null]);
  connection.onNotification("window/logMessage", () => {});
  connection.listen();
  const uri = pathToFileURL(root).href;
  await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: "ws" }],
    initializationOptions: { index: false, ...options },
    capabilities: {
      general: { positionEncodings: ["utf-16"] },
      workspace: {
        applyEdit: true,
        workspaceEdit: { documentChanges: true, resourceOperations: ["create"] },
        configuration: true,
      },
      window: { workDoneProgress: false },
    },
  });
  await connection.sendNotification("initialized", {});
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    protocol,
    connection,
    updates,
    applied,
    stderr: () => stderr,
    close: async () => {
      try {
        await atMost(connection.sendRequest("shutdown"), 5000);
        await connection.sendNotification("exit");
      } catch {
        // the server may already be gone
      }
      connection.dispose();
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Pids of the `lsp_server lsp` processes this test process started (Linux /proc). */
export function serverPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (ppid === process.pid && cmd.includes("lsp_server")) pids.push(Number(name));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** Wait until `check` holds, polling; fails with `what` after `ms`, which only fires when
 * something is wrong: a loaded 2-core machine took 15 s to start `kiln lsp` alone. */
export async function waitFor<T>(check: () => T | undefined | false, what: string, ms = 60000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Run `python -m lsp_server ARGS` to completion; its stdout, or an error with its stderr. */
export function kilnCli(args: string[], env: Record<string, string>, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(python(), ["-m", "lsp_server", ...args], { cwd, env: { ...process.env, ...env } });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`kiln ${args[0]} failed: ${err}`))));
  });
}

/**
 * `count` sessions of workspace `root` written straight into the store of KILN_HOME `home`, as
 * the agent's own `SessionStore` records them (titled `stored 0`, `stored 1`, …, oldest first).
 */
export function storeSessions(home: string, root: string, count: number): Promise<string[]> {
  const code = [
    "import json, sys",
    "from pathlib import Path",
    "from agent.session_store import SessionStore",
    "store = SessionStore()",
    "root = Path(sys.argv[1]).resolve()",
    "ids = [store.create(root, provider='scripted', model='m', mode='ask', title=f'stored {i}')",
    "       for i in range(int(sys.argv[2]))]",
    "store.close()",
    "print(json.dumps(ids))",
  ].join("\n");
  return new Promise((resolve, reject) => {
    const child = spawn(python(), ["-c", code, root, String(count)], { env: { ...process.env, KILN_HOME: home } });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`storing sessions failed: ${err}`))));
  });
}

/** `kiln registry serve` on a loopback port; resolves with its URL once it listens. */
export async function startRegistry(
  data: string,
  home: string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const child = spawn(python(), ["-m", "lsp_server", "registry", "serve", "--port", "0", "--data", data], {
    env: { ...process.env, KILN_HOME: home },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (c: Buffer) => {
      err += c.toString("utf8");
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`registry exited ${code}: ${err}`)));
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    url,
    close: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}
