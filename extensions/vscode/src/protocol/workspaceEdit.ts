/**
 * Applying an LSP `WorkspaceEdit` to text, for connections that have no editor behind them.
 *
 * Positions are in UTF-16 code units, which is what a JavaScript string index counts, so the
 * offsets here match what VS Code does. Used by the Node integration test (the test plays the
 * editor) and by the diff preview, which shows a proposal's result before it is applied.
 */

import { promises as fs } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { ApplyWorkspaceEditResult, Position, TextEdit, WorkspaceEdit } from "./types";

/** Offset of an LSP position (lines end at \n, \r\n or \r) in `text`, clamped to the text. */
export function offsetAt(text: string, pos: Position): number {
  let line = 0;
  let i = 0;
  while (line < pos.line && i < text.length) {
    const ch = text[i];
    i++;
    if (ch === "\n" || (ch === "\r" && text[i] !== "\n")) line++;
  }
  if (line < pos.line) return text.length;
  let end = i;
  while (end < text.length && text[end] !== "\n" && text[end] !== "\r") end++;
  return Math.min(i + pos.character, end);
}

/** Apply text edits the way an editor does: all ranges refer to the original text. */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const spans = edits
    .map((e) => ({ start: offsetAt(text, e.range.start), end: offsetAt(text, e.range.end), e }))
    .sort((a, b) => b.start - a.start || b.end - a.end);
  let out = text;
  for (const { start, end, e } of spans) out = out.slice(0, start) + e.newText + out.slice(end);
  return out;
}

export interface TextStore {
  read(uri: string): Promise<string | undefined>;
  write(uri: string, text: string): Promise<void>;
}

/** Files on disk, addressed by `file:` URIs. */
export const diskStore: TextStore = {
  async read(uri) {
    try {
      return await fs.readFile(fileURLToPath(uri), "utf8");
    } catch {
      return undefined;
    }
  },
  async write(uri, text) {
    const path = fileURLToPath(uri);
    await fs.mkdir(dirname(path), { recursive: true }); // a create may name new folders
    await fs.writeFile(path, text, "utf8");
  },
};

/** Apply a whole `WorkspaceEdit`; nothing is written unless every part applies. */
export async function applyWorkspaceEdit(
  edit: WorkspaceEdit,
  store: TextStore = diskStore,
): Promise<ApplyWorkspaceEditResult> {
  const pending = new Map<string, string>();
  const current = async (uri: string) =>
    pending.has(uri) ? pending.get(uri) : await store.read(uri);
  for (const change of edit.documentChanges ?? []) {
    if ("kind" in change) {
      if (change.kind !== "create") {
        return { applied: false, failureReason: `unsupported resource operation ${change.kind}` };
      }
      const uri = String(change.uri);
      if ((await current(uri)) === undefined) pending.set(uri, "");
      continue;
    }
    const text = await current(change.textDocument.uri);
    if (text === undefined) {
      return { applied: false, failureReason: `${change.textDocument.uri} does not exist` };
    }
    pending.set(change.textDocument.uri, applyTextEdits(text, change.edits));
  }
  for (const [uri, edits] of Object.entries(edit.changes ?? {})) {
    const text = await current(uri);
    if (text === undefined) return { applied: false, failureReason: `${uri} does not exist` };
    pending.set(uri, applyTextEdits(text, edits));
  }
  try {
    for (const [uri, text] of pending) await store.write(uri, text);
  } catch (err) {
    return { applied: false, failureReason: `could not write: ${(err as Error).message}` };
  }
  return { applied: true };
}
