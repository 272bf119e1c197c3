/**
 * How the extension starts `kiln lsp`, and what it tells the user when that cannot work.
 *
 * A missing interpreter or a Python without Kiln installed would otherwise show up as a
 * crash loop with a stack of "connection closed" messages; a short preflight turns it into one
 * sentence with the fix.
 */

import { spawn } from "node:child_process";

export interface ServerSettings {
  /** Full command override, e.g. ["kiln", "lsp"] or ["uv", "run", "kiln", "lsp"]. */
  command?: string[];
  /** The Python interpreter that has Kiln installed; used when `command` is empty. */
  python?: string;
  /** Extra environment for the server process. */
  env?: Record<string, string>;
}

export interface ServerCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The interpreter to preflight, when the command is a Python module invocation. */
  python?: string;
}

export function resolveServerCommand(
  settings: ServerSettings,
  baseEnv: Record<string, string | undefined> = process.env,
): ServerCommand {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(baseEnv)) if (typeof v === "string") env[k] = v;
  Object.assign(env, settings.env ?? {});
  env.PYTHONUNBUFFERED = "1";
  const command = (settings.command ?? []).filter((part) => part.trim() !== "");
  if (command.length > 0) {
    return { command: command[0], args: command.slice(1), env };
  }
  const python = settings.python?.trim() || "python3";
  return { command: python, args: ["-m", "lsp_server", "lsp"], env, python };
}

export interface StartProblem {
  message: string;
  fix: string;
}

const INSTALL_FIX =
  'Install Kiln into that interpreter (`python3 -m pip install -e .` in a Kiln checkout), or point the setting "kiln.server.python" at the Python that has it.';

/** Turn a spawn error or the server's stderr into one sentence and a fix. */
export function describeStartFailure(
  cmd: ServerCommand,
  error?: { code?: string; message?: string },
  stderr = "",
): StartProblem {
  if (error?.code === "ENOENT") {
    const setting = cmd.python ? '"kiln.server.python"' : '"kiln.server.command"';
    return {
      message: `Kiln could not start: \`${cmd.command}\` was not found.`,
      fix: `Install Python 3.11+ and Kiln, or set ${setting} to the full path of the program.`,
    };
  }
  if (/No module named '?lsp_server/.test(stderr) || /No module named '?agent/.test(stderr)) {
    return {
      message: `Kiln is not installed for \`${cmd.command}\`.`,
      fix: INSTALL_FIX,
    };
  }
  if (/Kiln needs Python 3\.11|SyntaxError|requires a different Python/.test(stderr)) {
    return {
      message: `\`${cmd.command}\` is too old for Kiln (it needs Python 3.11 or newer).`,
      fix: 'Set "kiln.server.python" to a Python 3.11+ interpreter with Kiln installed.',
    };
  }
  const last = stderr.trim().split("\n").filter(Boolean).pop();
  return {
    message: `Kiln could not start: ${last ?? error?.message ?? "the server exited"}.`,
    fix: 'Check the "Kiln" output channel, and the "kiln.server.*" settings.',
  };
}

// Finds the package without importing it, so the check costs a bare interpreter start.
const PREFLIGHT = [
  "import sys, importlib.util",
  "if sys.version_info < (3, 11): sys.exit('Kiln needs Python 3.11 or newer, not ' + sys.version.split()[0])",
  "if importlib.util.find_spec('lsp_server') is None: sys.exit(\"No module named 'lsp_server'\")",
].join("\n");

/** Check that the interpreter exists and can import Kiln, without starting the server. */
export function preflight(cmd: ServerCommand, timeoutMs = 15000): Promise<StartProblem | null> {
  if (!cmd.python) return Promise.resolve(null);
  return new Promise((resolve) => {
    let stderr = "";
    let settled = false;
    const done = (value: StartProblem | null) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(value);
      }
    };
    const child = spawn(cmd.command, ["-c", PREFLIGHT], {
      env: cmd.env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    const timer = setTimeout(() => {
      child.kill();
      done(null); // slow, not broken: let the real start report anything else
    }, timeoutMs);
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", (err: NodeJS.ErrnoException) => done(describeStartFailure(cmd, err, stderr)));
    child.on("close", (code) =>
      done(code === 0 ? null : describeStartFailure(cmd, undefined, stderr)),
    );
  });
}
