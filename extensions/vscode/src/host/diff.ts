/**
 * Proposed edits shown with VS Code's own diff editor.
 *
 * The two sides are virtual documents (`kiln-proposal:` URIs) served from memory, so showing a
 * proposal never touches the file; applying it is the server's `workspace/applyEdit`, which the
 * language client carries out once the user approves.
 */

import * as vscode from "vscode";

export const SCHEME = "kiln-proposal";

export class ProposalDiffs implements vscode.TextDocumentContentProvider {
  /** The two sides of each proposal shown, by its tool call: kept until it is answered. */
  private readonly texts = new Map<string, string>();
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "";
  }

  private put(toolCallId: string, side: "old" | "new", path: string, text: string): vscode.Uri {
    // A fresh query each time: VS Code caches a virtual document's text by its URI.
    const key = `${encodeURIComponent(toolCallId)}&${side}&${++this.counter}`;
    for (const k of this.texts.keys()) if (k.startsWith(`${encodeURIComponent(toolCallId)}&${side}&`)) this.texts.delete(k);
    this.texts.set(key, text);
    return vscode.Uri.from({ scheme: SCHEME, path: path.startsWith("/") ? path : `/${path}`, query: key });
  }

  /** Open the diff editor: current text on the left, the proposal on the right. */
  async show(toolCallId: string, path: string, oldText: string | null | undefined, newText: string): Promise<void> {
    const name = path.split(/[\\/]/).pop() ?? path;
    const left = this.put(toolCallId, "old", path, oldText ?? "");
    const right = this.put(toolCallId, "new", path, newText);
    const title = `${name} ↔ Kiln proposal${oldText == null ? " (new file)" : ""}`;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }

  get size(): number {
    return this.texts.size;
  }

  /** The proposal was accepted, rejected or withdrawn: its texts go. */
  drop(toolCallId: string): void {
    const prefix = `${encodeURIComponent(toolCallId)}&`;
    for (const k of this.texts.keys()) if (k.startsWith(prefix)) this.texts.delete(k);
  }

  /** The session changed: none of the proposals shown belong to the current one. */
  clear(): void {
    this.texts.clear();
  }
}
