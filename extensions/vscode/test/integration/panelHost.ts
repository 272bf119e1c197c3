/**
 * The built extension (dist/extension.js) activated in the `vscode` stand-in, with its chat view
 * resolved: what the host posts to the panel is recorded (each message checked against the
 * shared schema) and the test speaks for the panel, as the webview would.
 */

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { URI } from "vscode-uri";
import { parseHostMessage, parseWebviewMessage } from "../../src/protocol/messages";
import { host } from "./editorHost";
import { makeWorkspace, python, waitFor } from "./harness";

export interface ActivePanel {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  extension: any;
  delivered: Record<string, unknown>[];
  /** A webview → host message, as the panel posts it. */
  send(message: unknown): void;
  ofType(type: string): Record<string, unknown>[];
  /** Every answer's text streamed to the panel so far, joined. */
  answer(): string;
}

/**
 * Activate the built extension with the stand-in's current settings and folders. `restored`: the
 * session a panel restored after a window reload shows (its `ready` names it).
 */
export async function activatePanel(options: { restored?: string; visible?: boolean } = {}): Promise<ActivePanel> {
  // Loaded at run time (not bundled into the test): the real build output.
  const extension = require(join(__dirname, "..", "..", "dist", "extension.js"));
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: URI.file(join(__dirname, "..", "..")) };
  await extension.activate(context);
  const delivered: Record<string, unknown>[] = [];
  const listeners: ((m: unknown) => void)[] = [];
  const provider = host.providers.get("kiln.chat") as { resolveWebviewView(v: unknown): void };
  provider.resolveWebviewView({
    visible: options.visible ?? true,
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
  const send = (m: unknown) => {
    assert.ok(parseWebviewMessage(m).ok, JSON.stringify(m));
    listeners.forEach((l) => l(m));
  };
  send({ type: "ready", ...(options.restored ? { sessionId: options.restored } : {}) });
  const ofType = (t: string) => delivered.filter((m) => m.type === t);
  const answer = () =>
    ofType("update")
      .map((m) => m.update as { sessionUpdate: string; content?: { text?: string } })
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content?.text ?? "")
      .join("");
  return { extension, delivered, send, ofType, answer };
}

/**
 * A workspace with `app.py`, the scripted model playing `steps(home)` (KILN_HOME: `home`; chosen
 * by `provider`, the server's environment, unless a setting chooses it), the
 * stand-in's folder and settings (`kiln` settings besides the server's: `settings`), and the
 * built extension activated with its panel, once the server runs.
 */
export async function scriptedPanel(
  steps: (home: string) => unknown[],
  settings: Record<string, unknown> = {},
  provider: Record<string, string> = { KILN_PROVIDER: "scripted" },
  shown: { visible?: boolean } = {},
): Promise<{ ws: ReturnType<typeof makeWorkspace>; panel: ActivePanel }> {
  const ws = makeWorkspace({ "app.py": "x = 1\n" });
  const script = join(ws.home, "script.json");
  writeFileSync(script, JSON.stringify(steps(ws.home)));
  host.workspaceFolders = [{ uri: URI.file(ws.root), name: "ws", index: 0 }];
  host.settings = {
    kiln: { server: { python: python(), env: { ...provider, KILN_SCRIPT: script, KILN_HOME: ws.home } }, ...settings },
  };
  const panel = await activatePanel(shown);
  await waitFor(() => panel.ofType("server").some((m) => m.state === "running"), "server running");
  return { ws, panel };
}
