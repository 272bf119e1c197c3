/**
 * A deferred edit's Apply (or Discard) clicked twice before the server answered the first: the
 * card stays until the list is read again, so a double-click sent `kiln/edit/resolve` twice and
 * the second, for a proposal the server had already removed, showed an error under an edit that
 * had landed. The built extension against the real server.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { installVscodeModule } from "./editorHost";
import { type makeWorkspace, waitFor } from "./harness";
import { type ActivePanel, scriptedPanel } from "./panelHost";

installVscodeModule();

describe("a deferred edit resolved by a double-click", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;

  before(async () => {
    ({ ws, panel } = await scriptedPanel(() => [
      { match: "first change", text: "Proposing.", tool_calls: [{ name: "edit_file", input: { path: "app.py", old_text: "x = 1", new_text: "x = 2" } }] },
      { match: "app.py", text: "Proposed." },
      { match: "second change", text: "Proposing.", tool_calls: [{ name: "edit_file", input: { path: "app.py", old_text: "x = 2", new_text: "x = 3" } }] },
      { match: "app.py", text: "Proposed." },
    ]));
    panel.send({ type: "setMode", editMode: "deferred" });
    await waitFor(() => panel.ofType("config").at(-1)?.editMode === "deferred", "deferred edits");
  });

  after(async () => {
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  const idleTurns = () => panel.ofType("turn").filter((m) => m.state === "idle" && m.stopReason).length;
  const listed = () => (panel.ofType("pendingEdits").at(-1)?.edits ?? []) as { proposalId: string }[];

  async function propose(text: string): Promise<string> {
    const turns = idleTurns();
    panel.send({ type: "prompt", text });
    await waitFor(() => idleTurns() > turns, "the turn");
    const [edit] = await waitFor(() => (listed().length === 1 ? listed() : undefined), "the pending edit");
    return edit.proposalId;
  }

  for (const [decision, text, kept] of [["accept", "first change", "x = 2\n"], ["reject", "second change", "x = 2\n"]] as const) {
    test(`${decision === "accept" ? "Apply" : "Discard"} clicked twice resolves the edit once, without an error`, async () => {
      const proposalId = await propose(text);
      const errors = panel.ofType("error").length;
      const lists = panel.ofType("pendingEdits").length;
      panel.send({ type: "resolveEdit", proposalId, decision });
      panel.send({ type: "resolveEdit", proposalId, decision });
      await waitFor(() => panel.ofType("pendingEdits").length > lists && listed().length === 0, "the edit resolved");
      await new Promise((r) => setTimeout(r, 500)); // the second click's answer, if it was sent
      assert.deepEqual(panel.ofType("error").slice(errors), []);
      assert.equal(readFileSync(join(ws.root, "app.py"), "utf8"), kept);
    });
  }
});
