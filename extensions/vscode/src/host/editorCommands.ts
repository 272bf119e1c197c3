/**
 * "Ask about selection" and "Explain this file": the editor's selection or file goes to the
 * agent as a resource reference (URI, buffer text and range), not pasted into the question,
 * so the server can place it, label it and read unsaved text the same way for every client.
 */

import { isAbsolute, relative, sep } from "node:path";
import * as vscode from "vscode";
import type { ContextItem, Reference } from "../protocol/messages";
import type { PromptBlock } from "../protocol/types";

export interface Ask {
  blocks: PromptBlock[];
  text: string;
  references: Reference[];
}

/**
 * Why the server cannot take `uri`, if it cannot: it works on the workspace's first folder (its
 * root), so in a multi-root workspace a file of another folder is refused before anything is sent.
 */
export function otherFolder(uri: vscode.Uri): string | undefined {
  const [first, ...others] = vscode.workspace.workspaceFolders ?? [];
  if (!first || !others.length || uri.scheme !== "file") return undefined;
  const back = relative(first.uri.fsPath, uri.fsPath);
  if (back && back !== ".." && !back.startsWith(`..${sep}`) && !isAbsolute(back)) return undefined;
  return `Kiln works on the first folder of this workspace (${first.name}): ${uri.fsPath} is outside it.`;
}

export function selectionReference(editor: vscode.TextEditor): Ask | string {
  const elsewhere = otherFolder(editor.document.uri);
  if (elsewhere) return elsewhere;
  const sel = editor.selection;
  if (sel.isEmpty) return "Select some code first, then run Kiln: Ask About Selection.";
  const doc = editor.document;
  const endLine = sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line - 1 : sel.end.line;
  const rel = vscode.workspace.asRelativePath(doc.uri, false);
  return {
    blocks: [
      {
        type: "resource",
        resource: { uri: doc.uri.toString(), text: doc.getText(), mimeType: "text/plain" },
        range: {
          start: { line: sel.start.line, character: sel.start.character },
          end: { line: endLine, character: sel.end.character },
        },
      },
    ],
    text: "",
    references: [{ uri: doc.uri.toString(), label: `${rel}:${sel.start.line + 1}-${endLine + 1}` }],
  };
}

export async function askAboutSelection(send: (ask: Ask) => Promise<unknown>): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage("Open a file and select some code first.");
    return;
  }
  const ref = selectionReference(editor);
  if (typeof ref === "string") {
    void vscode.window.showWarningMessage(ref);
    return;
  }
  const question = await vscode.window.showInputBox({
    prompt: "Ask Kiln about the selection",
    placeHolder: "What does this do?",
  });
  if (!question) return;
  await send({ ...ref, blocks: [{ type: "text", text: question }, ...ref.blocks], text: question });
}

export async function explainFile(send: (ask: Ask) => Promise<unknown>): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage("Open the file you want explained first.");
    return;
  }
  const doc = editor.document;
  const elsewhere = otherFolder(doc.uri);
  if (elsewhere) {
    void vscode.window.showWarningMessage(elsewhere);
    return;
  }
  const rel = vscode.workspace.asRelativePath(doc.uri, false);
  const text = "Explain this file: what it is for, its main parts, and how they fit together.";
  await send({
    blocks: [
      { type: "text", text },
      { type: "resource", resource: { uri: doc.uri.toString(), text: doc.getText(), mimeType: "text/plain" } },
    ],
    text,
    references: [{ uri: doc.uri.toString(), label: rel }],
  });
}

/** "Kiln: Add Selection to Chat": the selection as a context pill of the next question. */
export function selectionContext(): ContextItem | string {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return "Open a file and select some code first.";
  const ref = selectionReference(editor);
  if (typeof ref === "string") return ref;
  const sel = editor.selection;
  const endLine = sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line : sel.end.line + 1;
  return {
    label: `@${ref.references[0].label}`,
    uri: editor.document.uri.toString(),
    range: { startLine: sel.start.line + 1, endLine },
  };
}

/**
 * Inline edit (Ctrl+I / Cmd+I on a selection): the agent is asked to change only those lines;
 * its edit comes back through the usual review, hunk by hunk.
 */
export async function inlineEdit(send: (ask: Ask) => Promise<unknown>): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage("Open a file and select the code to edit first.");
    return;
  }
  const ref = selectionReference(editor);
  if (typeof ref === "string") {
    void vscode.window.showWarningMessage(editor.selection.isEmpty ? "Select the code to edit first, then press Ctrl+I." : ref);
    return;
  }
  // The agent edits files of the workspace by their path: an untitled buffer or a file
  // elsewhere is nothing it could change, so no turn is spent finding that out.
  const uri = editor.document.uri;
  if (uri.scheme !== "file" || isAbsolute(vscode.workspace.asRelativePath(uri, false))) {
    void vscode.window.showWarningMessage(
      "Kiln edits the files of this workspace: save this one inside the workspace folder first.",
    );
    return;
  }
  const instruction = await vscode.window.showInputBox({
    prompt: "Kiln: edit the selection",
    placeHolder: "e.g. handle the empty list",
  });
  if (!instruction) return;
  const where = ref.references[0].label;
  const text = `Edit ${where}: ${instruction}\nChange only those lines, with edit_file; no explanation needed.`;
  await send({ ...ref, blocks: [{ type: "text", text }, ...ref.blocks], text });
}
