/** The quick picks of **Kiln: Set Permission and Edit Mode**: what the agent may do without
 * asking, then how edits land. Undefined when the user dismisses either. */

import * as vscode from "vscode";

const MODES = [
  { label: "ask", description: "reads free; edits and commands ask" },
  { label: "auto-edit", description: "edits free; commands ask" },
  { label: "ci", description: "no questions; risky commands denied" },
  { label: "yolo", description: "everything allowed" },
];

const EDIT_MODES = [
  { label: "ask", description: "approve each edit" },
  { label: "deferred", description: "collect edits for review in the panel" },
  { label: "auto", description: "apply edits at once" },
];

export const MODE_NAMES = MODES.map((m) => m.label);
export const EDIT_MODE_NAMES = EDIT_MODES.map((m) => m.label);

export async function pickModes(): Promise<{ mode: string; editMode: string } | undefined> {
  const mode = await vscode.window.showQuickPick(MODES, { title: "Kiln: permission mode" });
  if (!mode) return undefined;
  const edit = await vscode.window.showQuickPick(EDIT_MODES, { title: "Kiln: how edits land" });
  if (!edit) return undefined;
  return { mode: mode.label, editMode: edit.label };
}
