import { beforeEach, describe, expect, test } from "vitest";
import * as vscode from "vscode";
import { ChatPanel } from "../../src/host/chatPanel";
import type { WebviewToHost } from "../../src/protocol/messages";
import { reset } from "../stubs/vscode";

function fakeView() {
  const listeners: ((m: unknown) => void)[] = [];
  const delivered: unknown[] = [];
  const view = {
    webview: {
      options: {},
      html: "",
      cspSource: "vscode-resource:",
      asWebviewUri: (u: vscode.Uri) => u,
      onDidReceiveMessage: (l: (m: unknown) => void) => listeners.push(l),
      postMessage: async (m: unknown) => delivered.push(m),
    },
    onDidDispose: () => {},
  };
  return { view, delivered, send: (m: unknown) => listeners.forEach((l) => l(m)) };
}

let received: WebviewToHost[];
let logs: string[];
let panel: ChatPanel;

beforeEach(() => {
  reset();
  received = [];
  logs = [];
  panel = new ChatPanel(vscode.Uri.file("/ext"), (m) => received.push(m), (l) => logs.push(l));
});

describe("chat panel", () => {
  test("the page allows only its own nonce'd script", () => {
    const { view } = fakeView();
    panel.resolveWebviewView(view as never);
    const html = view.webview.html;
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]{24})'/.exec(html)?.[1];
    expect(nonce).toBeTruthy();
    expect(html).toContain(`<script nonce="${nonce}" src="file:///ext/dist/webview.js">`);
    expect(html).toContain("default-src 'none'");
    expect(html).not.toContain("unsafe-inline");
    // Images only from the extension or data: URLs — never the network.
    const img = /img-src ([^;"]*)/.exec(html)?.[1];
    expect(img).toBe("vscode-resource: data:");
    expect(html).not.toMatch(/https:|http:|\*/);
    // A fresh nonce per page.
    panel.resolveWebviewView(view as never);
    expect(/script-src 'nonce-([^']+)'/.exec(view.webview.html)?.[1]).not.toBe(nonce);
  });

  test("messages wait for the webview's ready, then arrive in order", () => {
    const { view, delivered, send } = fakeView();
    panel.post({ type: "server", state: "running" });
    panel.resolveWebviewView(view as never);
    panel.post({ type: "turn", state: "running" });
    expect(delivered).toEqual([]);
    send({ type: "ready" });
    expect(delivered).toEqual([
      { type: "server", state: "running" },
      { type: "turn", state: "running" },
    ]);
    panel.post({ type: "turn", state: "idle" });
    expect(delivered).toHaveLength(3);
    expect(received).toEqual([{ type: "ready" }]);
  });

  test("a malformed webview message is logged and not handled", () => {
    const { view, send } = fakeView();
    panel.resolveWebviewView(view as never);
    send({ type: "prompt", text: "" });
    send({ type: "rm -rf" });
    expect(received).toEqual([]);
    expect(logs).toHaveLength(2);
    expect(logs[0]).toMatch(/malformed webview message/);
  });
});
