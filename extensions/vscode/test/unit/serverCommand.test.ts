import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RestartPolicy } from "../../src/protocol/restart";
import { describeStartFailure, preflight, resolveServerCommand } from "../../src/protocol/serverCommand";

const PYTHON = process.env.KILN_PYTHON || "python3";
let bare: string | undefined; // a real Python without Kiln: a fresh venv
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kiln-venv-"));
  try {
    execFileSync(PYTHON, ["-m", "venv", "--without-pip", join(dir, "venv")], { stdio: "ignore" });
    bare = join(dir, "venv", "bin", "python");
  } catch {
    bare = undefined;
  }
}, 60000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("server command", () => {
  test("defaults to python3 -m lsp_server lsp; a command setting wins", () => {
    const def = resolveServerCommand({}, { PATH: "/bin" });
    expect([def.command, ...def.args]).toEqual(["python3", "-m", "lsp_server", "lsp"]);
    expect(def.python).toBe("python3");
    expect(def.env).toMatchObject({ PATH: "/bin", PYTHONUNBUFFERED: "1" });
    const py = resolveServerCommand({ python: " /opt/venv/bin/python " }, {});
    expect(py.command).toBe("/opt/venv/bin/python");
    const cmd = resolveServerCommand({ command: ["uv", "run", "kiln", "lsp", ""], python: "ignored", env: { KILN_PROVIDER: "scripted" } }, {});
    expect([cmd.command, ...cmd.args]).toEqual(["uv", "run", "kiln", "lsp"]);
    expect(cmd.python).toBeUndefined();
    expect(cmd.env.KILN_PROVIDER).toBe("scripted");
  });

  test("a missing interpreter is one sentence with the setting to fix", async () => {
    const problem = await preflight(resolveServerCommand({ python: "/nonexistent/python3.11" }, process.env));
    expect(problem?.message).toBe("Kiln could not start: `/nonexistent/python3.11` was not found.");
    expect(problem?.fix).toContain('"kiln.server.python"');
  });

  test("a Python without Kiln is told how to install it", async (ctx) => {
    if (!bare) ctx.skip();
    const { PYTHONPATH: _inherited, ...env } = process.env; // a PYTHONPATH could lend it Kiln
    const problem = await preflight(resolveServerCommand({ python: bare }, env));
    expect(problem?.message).toBe(`Kiln is not installed for \`${bare}\`.`);
    // Kiln is installed from a checkout: there is no `kiln-agent` on an index to fetch.
    expect(problem?.fix).toContain("`python3 -m pip install -e .` in a Kiln checkout");
    expect(problem?.fix).not.toMatch(/kiln-agent/);
  }, 30000);

  test("the Python running these tests has Kiln: no problem", async () => {
    expect(await preflight(resolveServerCommand({ python: PYTHON }, process.env))).toBeNull();
  }, 30000);

  test("other failures quote the last stderr line", () => {
    const cmd = resolveServerCommand({ command: ["kiln", "lsp"] }, {});
    expect(describeStartFailure(cmd, { code: "ENOENT" }).fix).toContain('"kiln.server.command"');
    expect(describeStartFailure(cmd, undefined, "Kiln needs Python 3.11 or newer, not 3.9.2\n").message).toMatch(
      /too old for Kiln/,
    );
    expect(describeStartFailure(cmd, undefined, "warming up\nConfigError: no provider\n").message).toBe(
      "Kiln could not start: ConfigError: no provider.",
    );
  });
});

describe("restart policy", () => {
  test("restarts up to the limit inside the window, then stops; old crashes expire", () => {
    let now = 0;
    const policy = new RestartPolicy(2, 1000, () => now);
    expect(policy.crashed()).toBe(true);
    now = 100;
    expect(policy.crashed()).toBe(true);
    now = 200;
    expect(policy.crashed()).toBe(false);
    now = 5000;
    expect(policy.crashed()).toBe(true);
    expect(policy.recent).toBe(1);
  });
});
