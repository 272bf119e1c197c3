/**
 * The host side of the composer: completions from the server, context pills as prompt blocks,
 * slash commands, code-block buttons and file links. Paths coming from the panel are untrusted
 * (an answer may be a prompt injection): a file is opened only if it resolves inside a
 * workspace folder.
 */

import { realpathSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { KilnProtocol } from "../protocol/client";
import { commandCompletions, mentionCompletions } from "../protocol/completions";
import type { Completion, ContextItem } from "../protocol/messages";
import type { PromptBlock } from "../protocol/types";

export async function completions(protocol: KilnProtocol, trigger: "@" | "/", query: string): Promise<Completion[]> {
  if (trigger === "/") return commandCompletions((await protocol.completeCommands(query)).commands);
  return mentionCompletions((await protocol.completeMentions(query, 30)).items);
}

/**
 * Pills as prompt blocks: a reference the server reads from the live buffer or the disk. A
 * document without a file (an untitled buffer) is not synced to the server, so its text goes
 * with the reference.
 */
export function contextBlocks(items: ContextItem[] = []): PromptBlock[] {
  return items.map((c) => {
    const range = c.range
      ? { range: { start: { line: c.range.startLine - 1, character: 0 }, end: { line: c.range.endLine - 1, character: 0 } } }
      : {};
    const unsynced = vscode.workspace.textDocuments.find((d) => d.uri.scheme !== "file" && d.uri.toString() === c.uri);
    if (unsynced) return { type: "resource", resource: { uri: c.uri, text: unsynced.getText(), mimeType: "text/plain" }, ...range };
    return { type: "resource_link", uri: c.uri, name: c.label.replace(/^@/, ""), ...range };
  });
}

/** `p` with its symbolic links resolved, as far as it exists (the rest appended as is). */
function resolved(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    const parent = path.dirname(p);
    return parent === p ? p : path.join(resolved(parent), path.basename(p));
  }
}

/**
 * `rel` (from an answer or a tool card) as a file inside a workspace folder, else undefined.
 * Links are followed first: `docs/passwd` through a link `docs -> /etc` is outside.
 */
export function insideWorkspace(rel: string): vscode.Uri | undefined {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const root = folder.uri.fsPath;
    const full = path.resolve(root, rel);
    const back = path.relative(resolved(root), resolved(full));
    if (back && back !== ".." && !back.startsWith(`..${path.sep}`) && !path.isAbsolute(back)) {
      return vscode.Uri.file(full);
    }
  }
  return undefined;
}

export async function openWorkspaceFile(rel: string, line?: number): Promise<string | undefined> {
  const uri = insideWorkspace(rel);
  if (!uri) return `${rel} is not a file in this workspace.`;
  try {
    await vscode.workspace.fs.stat(uri);
  } catch {
    return `${rel} does not exist in this workspace.`;
  }
  const at = new vscode.Position(Math.max((line ?? 1) - 1, 0), 0);
  await vscode.window.showTextDocument(uri, { selection: new vscode.Range(at, at), preview: true });
  return undefined;
}

/** Copy / Insert / Apply of a code block; returns a line to show in the panel, if any. */
export async function codeAction(action: "copy" | "insert" | "apply", code: string, target: string): Promise<string | undefined> {
  if (action === "copy") {
    await vscode.env.clipboard.writeText(code);
    return "Copied to the clipboard.";
  }
  if (action === "insert") {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return "Open a file to insert the code into.";
    // The last editor may be a proposal's diff (kiln-proposal:) or another read-only view.
    const where = editor.document.uri;
    if (where.scheme !== "file" && where.scheme !== "untitled") {
      return "The active editor is not a file: click into the file to insert the code into, then Insert.";
    }
    const done = await editor.edit((b) => b.replace(editor.selection, code));
    return done ? undefined : `Could not insert into ${vscode.workspace.asRelativePath(where, false)} (read-only?).`;
  }
  // Apply: the named file (```python calc.py) or the active editor, whole file or selection,
  // after the user saw the diff and confirmed.
  let uri = target ? insideWorkspace(target) : vscode.window.activeTextEditor?.document.uri;
  if (target && !uri) return `${target} is not a file in this workspace.`;
  if (!uri) return "Open the file to apply the code to, or name it after the language (```python calc.py).";
  // The active editor, like a named file, must be a file of the workspace (an untitled buffer
  // is written nowhere): not a file opened from elsewhere, nor a proposal's diff.
  if (!target && uri.scheme !== "untitled" && !(uri.scheme === "file" && insideWorkspace(uri.fsPath))) {
    const shown = uri.scheme === "file" ? uri.fsPath : "The active editor";
    return `${shown} is not a file in this workspace: open one of its files, or name the file after the language (\`\`\`python calc.py).`;
  }
  const doc = await openExisting(uri);
  if (!doc) return createWith(uri, code);
  const editor = vscode.window.activeTextEditor;
  const selection = editor && editor.document.uri.toString() === uri.toString() && !editor.selection.isEmpty ? editor.selection : undefined;
  const range = selection ?? new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
  const where = vscode.workspace.asRelativePath(uri, false);
  const choice = await vscode.window.showInformationMessage(
    `Replace ${selection ? "the selection in" : "the whole of"} ${where} with this code block?`,
    { modal: true },
    "Apply",
  );
  if (choice !== "Apply") return undefined;
  const edit = new vscode.WorkspaceEdit();
  edit.replace(uri, range, code);
  return (await vscode.workspace.applyEdit(edit)) ? `Applied to ${where}.` : `Could not apply to ${where}.`;
}

/** The document at `uri`; undefined when no such file exists (other failures are thrown). */
async function openExisting(uri: vscode.Uri): Promise<vscode.TextDocument | undefined> {
  try {
    return await vscode.workspace.openTextDocument(uri);
  } catch (err) {
    const exists = await vscode.workspace.fs.stat(uri).then(
      () => true,
      () => false,
    );
    if (exists) throw err;
    return undefined;
  }
}

/** Apply to a file the answer names that does not exist yet: create it, once confirmed. */
async function createWith(uri: vscode.Uri, code: string): Promise<string | undefined> {
  const where = vscode.workspace.asRelativePath(uri, false);
  const choice = await vscode.window.showInformationMessage(`Create ${where} with this code block?`, { modal: true }, "Create");
  if (choice !== "Create") return undefined;
  const edit = new vscode.WorkspaceEdit();
  edit.createFile(uri, { ignoreIfExists: true });
  edit.insert(uri, new vscode.Position(0, 0), code);
  return (await vscode.workspace.applyEdit(edit)) ? `Created ${where}.` : `Could not create ${where}.`;
}
