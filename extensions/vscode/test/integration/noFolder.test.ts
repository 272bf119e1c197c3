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
import { URI } from "vscode-uri";
import { parseHostMessage } from "../../src/protocol/messages";
import { host, installVscodeModule } from "./editorHost";
import { python } from "./harness";

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
    const extension = require(join(__dirname, "..", "..", "dist", "extension.js"));
    const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: URI.file(join(__dirname, "..", "..")) };
    await extension.activate(context);
    const delivered: Record<string, unknown>[] = [];
    const listeners: ((m: unknown) => void)[] = [];
    const provider = host.providers.get("kiln.chat") as { resolveWebviewView(v: unknown): void };
    provider.resolveWebviewView({
      webview: {
        options: {},
        html: "",
        cspSource: "vscode-webview:",
        asWebviewUri: (u: URI) => u,
        onDidReceiveMessage: (l: (m: unknown) => void) => listeners.push(l),
        postMessage: async (m: unknown) => {
          assert.ok(parseHostMessage(m).ok, JSON.stringify(m));
          delivered.push(m as Record<string, unknown>);
          return true;
        },
      },
      onDidDispose: () => ({ dispose() {} }),
    });
    listeners.forEach((l) => l({ type: "ready" }));
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
