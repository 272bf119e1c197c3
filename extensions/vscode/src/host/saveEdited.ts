/**
 * Accepted edits reach the disk: after the server's `workspace/applyEdit` is applied, each
 * edited document is saved, so the commands the agent runs next (tests, builds) see the edit.
 * A document that already had the user's own unsaved changes is not saved (that would write
 * their half-typed text behind their back); the user is told to save it instead.
 */

import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, WorkspaceEdit } from "../protocol/types";

export interface EditableDocument {
  uri: { toString(): string };
  isDirty: boolean;
  save(): PromiseLike<boolean>;
}

/** The URIs a workspace edit changes (text edits of both shapes). */
export function editedUris(edit: WorkspaceEdit): string[] {
  const uris: string[] = [];
  for (const change of edit.documentChanges ?? []) {
    const doc = (change as { textDocument?: { uri: string } }).textDocument;
    if (doc) uris.push(doc.uri);
  }
  for (const uri of Object.keys(edit.changes ?? {})) uris.push(uri);
  return uris;
}

export async function applyThenSave(
  params: ApplyWorkspaceEditParams,
  apply: (params: ApplyWorkspaceEditParams) => Promise<ApplyWorkspaceEditResult>,
  documents: () => readonly EditableDocument[],
  normalize: (uri: string) => string,
  warn: (message: string) => void,
): Promise<ApplyWorkspaceEditResult> {
  const edited = new Set(editedUris(params.edit).map(normalize));
  const dirtyBefore = new Set(documents().filter((d) => d.isDirty).map((d) => d.uri.toString()));
  const result = await apply(params);
  if (!result.applied) return result;
  const kept: string[] = [];
  for (const doc of documents()) {
    const uri = doc.uri.toString();
    if (!edited.has(uri) || !doc.isDirty) continue;
    if (dirtyBefore.has(uri)) kept.push(uri);
    else if (!(await doc.save())) kept.push(uri);
  }
  if (kept.length) {
    const names = kept.map((u) => decodeURIComponent(u.replace(/^.*\//, ""))).join(", ");
    warn(`Kiln edited ${names}, which had unsaved changes of yours, so it was not saved: save it for the agent's commands to see the edit.`);
  }
  return result;
}
