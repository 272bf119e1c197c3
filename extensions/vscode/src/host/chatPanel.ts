/**
 * The sidebar webview view. Messages both ways pass the shared schema; anything the host wants
 * to show before the view exists (or while it is hidden and disposed) is queued, then replayed
 * when the webview says it is ready.
 */

import * as vscode from "vscode";
import { type HostToWebview, parseWebviewMessage, type WebviewToHost } from "../protocol/messages";
import { webviewHtml } from "./webviewHtml";

export const VIEW_ID = "kiln.chat";

export class ChatPanel implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private queue: HostToWebview[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: WebviewToHost) => void,
    private readonly log: (line: string) => void = () => {},
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = this.html(view.webview, dist);
    view.webview.onDidReceiveMessage((raw: unknown) => this.receive(raw));
    view.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
    });
  }

  receive(raw: unknown): void {
    const parsed = parseWebviewMessage(raw);
    if (!parsed.ok) {
      this.log(`ignored a malformed webview message: ${parsed.error}`);
      return;
    }
    if (parsed.message.type === "ready") {
      this.ready = true;
      const queued = this.queue.splice(0);
      for (const m of queued) void this.view?.webview.postMessage(m);
    }
    this.onMessage(parsed.message);
  }

  post(message: HostToWebview): void {
    if (this.view && this.ready) void this.view.webview.postMessage(message);
    else this.queue.push(message);
  }

  /** Whether the user can see the panel now (a hidden or never opened one cannot be). */
  get visible(): boolean {
    return this.view?.visible === true;
  }

  get queued(): number {
    return this.queue.length;
  }

  private html(webview: vscode.Webview, dist: vscode.Uri): string {
    return webviewHtml(
      webview.cspSource,
      webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
      webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css")).toString(),
    );
  }
}
