/**
 * The built extension activated with no folder open: it starts no server (which would index,
 * and create .kiln/ in, whatever directory VS Code was started from) and the panel asks for a
 * folder instead.
 */

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { host, installVscodeModule } from "./editorHost";
import { python } from "./harness";
import { activatePanel } from "./panelHost";

installVscodeModule();

function serverChildren(): number {
  let n = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && readFileSync(`/proc/${name}/cmdline`, "utf8").includes("lsp_server")) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

test("with no folder open the panel says to open one and no server starts", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "kiln-nofolder-"));
  const before = process.cwd();
  process.chdir(cwd);
  try {
    host.workspaceFolders = [];
    host.settings = { kiln: { server: { python: python() } } };
    const { extension, delivered } = await activatePanel();
    assert.ok(delivered.some((m) => m.type === "server" && m.state === "no-folder"), JSON.stringify(delivered));
    assert.equal(serverChildren(), 0);
    assert.equal(existsSync(join(cwd, ".kiln")), false);
    await host.commands.get("kiln.showIndexStatus")?.();
    assert.ok(host.shown.some((m) => /open one/.test(m)), host.shown.join("\n"));
    await extension.deactivate();
  } finally {
    process.chdir(before);
  }
});
