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
  private readonly texts = new Map<string, string>();
  private counter = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "";
  }

  private put(path: string, text: string): vscode.Uri {
    const key = String(++this.counter);
    this.texts.set(key, text);
    return vscode.Uri.from({ scheme: SCHEME, path: path.startsWith("/") ? path : `/${path}`, query: key });
  }

  /** Open the diff editor: current text on the left, the proposal on the right. */
  async show(path: string, oldText: string | null | undefined, newText: string): Promise<void> {
    const name = path.split(/[\\/]/).pop() ?? path;
    const left = this.put(path, oldText ?? "");
    const right = this.put(path, newText);
    const title = `${name} ↔ Kiln proposal${oldText == null ? " (new file)" : ""}`;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }

  get size(): number {
    return this.texts.size;
  }

  clear(): void {
    this.texts.clear();
  }
}
