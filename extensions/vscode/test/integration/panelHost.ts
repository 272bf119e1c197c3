/**
 * The built extension (dist/extension.js) activated in the `vscode` stand-in, with its chat view
 * resolved: what the host posts to the panel is recorded (each message checked against the
 * shared schema) and the test speaks for the panel, as the webview would.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { URI } from "vscode-uri";
import { parseHostMessage, parseWebviewMessage } from "../../src/protocol/messages";
import { host } from "./editorHost";

export interface ActivePanel {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  extension: any;
  delivered: Record<string, unknown>[];
  /** A webview → host message, as the panel posts it. */
  send(message: unknown): void;
  ofType(type: string): Record<string, unknown>[];
}

/**
 * Activate the built extension with the stand-in's current settings and folders. `restored`: the
 * session a panel restored after a window reload shows (its `ready` names it).
 */
export async function activatePanel(options: { restored?: string } = {}): Promise<ActivePanel> {
  // Loaded at run time (not bundled into the test): the real build output.
  const extension = require(join(__dirname, "..", "..", "dist", "extension.js"));
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: URI.file(join(__dirname, "..", "..")) };
  await extension.activate(context);
  const delivered: Record<string, unknown>[] = [];
  const listeners: ((m: unknown) => void)[] = [];
  const provider = host.providers.get("kiln.chat") as { resolveWebviewView(v: unknown): void };
  provider.resolveWebviewView({
    visible: true,
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
  return { extension, delivered, send, ofType: (t) => delivered.filter((m) => m.type === t) };
}
