/**
 * The `kiln lsp` process: preflight, start, restart on crash up to a limit, and a clear
 * message with a fix when it cannot run. The language client itself comes from a factory so
 * this logic can be exercised without VS Code.
 */

import * as vscode from "vscode";
import type { RpcConnection } from "../protocol/client";
import { RestartPolicy } from "../protocol/restart";
import {
  type ServerCommand,
  type ServerSettings,
  type StartProblem,
  describeStartFailure,
  preflight,
  resolveServerCommand,
} from "../protocol/serverCommand";

export interface ClientHandle extends RpcConnection {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface ClientHooks {
  /** The connection closed unexpectedly; return true to let the client restart the server. */
  closed(): boolean;
  /** The client gave up on a broken connection. */
  failed(message: string): void;
}

export type ClientFactory = (
  cmd: ServerCommand,
  initializationOptions: Record<string, unknown>,
  hooks: ClientHooks,
) => ClientHandle;

export type ServerState = "starting" | "running" | "stopped" | "failed";

/** Settings that start a program on the host or widen what the agent does unasked: a folder's
 * `.vscode/settings.json` is the repository's file, so they come from the user's settings only
 * (package.json scopes them `machine`; read the same way here for an editor that ignores it). */
const USER_ONLY = new Set(["server.command", "server.python", "server.env", "mode", "editMode"]);

function setting<T>(config: vscode.WorkspaceConfiguration, key: string): T | undefined {
  if (!USER_ONLY.has(key)) return config.get<T>(key);
  const seen = config.inspect<T>(key);
  return seen === undefined ? config.get<T>(key) : (seen.globalValue ?? seen.defaultValue);
}

export function readSettings(config: vscode.WorkspaceConfiguration): {
  server: ServerSettings;
  maxRestarts: number;
  options: Record<string, unknown>;
  /** `kiln.model` (empty: the server chooses). */
  model: string;
} {
  const options: Record<string, unknown> = {};
  for (const key of ["mode", "editMode", "provider", "model", "permissionTimeout", "maxSteps"]) {
    const value = setting(config, key);
    if (value !== undefined && value !== null && value !== "") options[key] = value;
  }
  return {
    server: {
      command: setting<string[]>(config, "server.command") ?? [],
      python: setting<string>(config, "server.python") ?? "",
      env: setting<Record<string, string>>(config, "server.env") ?? {},
    },
    maxRestarts: config.get<number>("server.maxRestarts") ?? 5,
    options,
    model: typeof options.model === "string" ? options.model : "",
  };
}

export class KilnServer implements vscode.Disposable {
  client: ClientHandle | undefined;
  state: ServerState = "stopped";
  problem: StartProblem | undefined;
  private policy = new RestartPolicy();
  private readonly listeners: ((state: ServerState, client?: ClientHandle) => void)[] = [];

  constructor(
    private readonly factory: ClientFactory,
    private readonly settings: () => ReturnType<typeof readSettings>,
    private readonly out: { appendLine(line: string): void },
  ) {}

  onState(listener: (state: ServerState, client?: ClientHandle) => void): void {
    this.listeners.push(listener);
  }

  private set(state: ServerState, client?: ClientHandle): void {
    this.state = state;
    for (const l of this.listeners) l(state, client);
  }

  private async fail(problem: StartProblem): Promise<void> {
    this.problem = problem;
    this.out.appendLine(`${problem.message} ${problem.fix}`);
    this.set("failed");
    const choice = await vscode.window.showErrorMessage(`${problem.message} ${problem.fix}`, "Open Settings", "Retry");
    if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "kiln.server");
    } else if (choice === "Retry") {
      await this.restart();
    }
  }

  async start(): Promise<boolean> {
    if (this.client) return true;
    const { server, maxRestarts, options } = this.settings();
    this.policy = new RestartPolicy(maxRestarts);
    this.problem = undefined;
    const cmd = resolveServerCommand(server);
    this.set("starting");
    this.out.appendLine(`starting ${cmd.command} ${cmd.args.join(" ")}`);
    const problem = await preflight(cmd);
    if (problem) {
      void this.fail(problem);
      return false;
    }
    const hooks: ClientHooks = {
      closed: () => {
        const again = this.policy.crashed();
        this.out.appendLine(
          again
            ? `the server stopped; restarting (${this.policy.recent}/${this.policy.limit})`
            : `the server crashed ${this.policy.recent} times in a row; not restarting`,
        );
        if (again) {
          this.set("starting");
        } else {
          this.client = undefined;
          void this.fail({
            message: `The Kiln server crashed ${this.policy.recent} times in a few minutes and was not restarted.`,
            fix: 'See the "Kiln" output channel for its last error, then choose Retry.',
          });
        }
        return again;
      },
      failed: (message) => this.out.appendLine(`connection problem: ${message}`),
    };
    const client = this.factory(cmd, options, hooks);
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      this.client = undefined;
      const e = err as { code?: string; message?: string };
      void this.fail(describeStartFailure(cmd, e, e?.message ?? ""));
      return false;
    }
    this.set("running", client);
    return true;
  }

  /** Called by the client factory once an automatic restart has connected again. */
  restarted(): void {
    if (this.client) this.set("running", this.client);
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    // Listeners drop the connection first, so nothing new is sent while it shuts down.
    this.set("stopped");
    if (client) {
      try {
        await client.stop();
      } catch (err) {
        this.out.appendLine(`stop: ${(err as Error)?.message ?? err}`);
      }
    }
  }

  async restart(): Promise<boolean> {
    await this.stop();
    return this.start();
  }

  dispose(): void {
    void this.stop();
  }
}
