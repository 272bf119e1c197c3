/**
 * The `kiln.*` settings package.json documents, each doing what it says, in the built extension
 * against the real server: the provider and model a session gets, the modes the panel shows and
 * the session keeps, the step limit, and the permission timeout (refused as timed out).
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type makeWorkspace, kilnCli, waitFor } from "./harness";
import { type ActivePanel, scriptedPanel } from "./panelHost";
import { installVscodeModule } from "./editorHost";

installVscodeModule();

describe("the kiln settings", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;

  before(async () => {
    ({ ws, panel } = await scriptedPanel(
      () => [
        { match: "loop", text: "Reading.", tool_calls: [{ name: "read_file", input: { path: "app.py" } }] },
        { match: "run", text: "Running.", tool_calls: [{ name: "run_command", input: { command: "curl -s https://example.com/ -o page.html" } }] },
        { text: "Done." },
      ],
      { provider: "scripted", model: "set-model", mode: "auto-edit", editMode: "deferred", maxSteps: 1, permissionTimeout: 1 },
      {}, // only the setting chooses the provider
    ));
  });

  after(async () => {
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  const idle = () => panel.ofType("turn").filter((m) => m.state === "idle" && m.stopReason);
  async function ask(text: string): Promise<Record<string, unknown>> {
    const before = idle().length;
    panel.send({ type: "prompt", text });
    return waitFor(() => idle()[before], `the turn of ${text}`);
  }

  test("kiln.mode and kiln.editMode: the panel's pickers and the session", async () => {
    await waitFor(() => panel.ofType("config").at(-1)?.mode === "auto-edit", "the mode picker");
    assert.equal(panel.ofType("config").at(-1)?.editMode, "deferred");
  });

  test("kiln.maxSteps: a question stops after that many replies", async () => {
    const done = await ask("loop over it");
    assert.equal(done.stopReason, "max_steps", JSON.stringify(panel.ofType("error")));
  });

  test("kiln.provider and kiln.model: the stored session's provider and model", async () => {
    const rows = JSON.parse(await kilnCli(["sessions", "list", "--json", "--root", ws.root], { KILN_HOME: ws.home }, ws.root));
    assert.equal(rows[0].model, "set-model", JSON.stringify(rows));
    assert.equal(rows[0].mode, "auto-edit", JSON.stringify(rows));
  });

  test("kiln.permissionTimeout: an unanswered question is withdrawn after that many seconds", async () => {
    const asked = panel.ofType("permission").length;
    const before = idle().length;
    panel.send({ type: "prompt", text: "run it" });
    const question = await waitFor(() => panel.ofType("permission")[asked], "the question");
    await waitFor(
      () => panel.ofType("permissionClosed").find((m) => m.requestId === question.requestId && m.reason === "cancelled"),
      "the question withdrawn",
    );
    await waitFor(() => idle()[before], "the turn end");
  });
});

describe("a kiln setting the server cannot take", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;

  after(async () => {
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  test("kiln.permissionTimeout: 0 is said in the panel, not silently dropped with the other settings", async () => {
    ({ ws, panel } = await scriptedPanel(() => ["Hi."], { mode: "yolo", permissionTimeout: 0 }));
    const error = await waitFor(() => panel.ofType("error").find((m) => /permissionTimeout/.test(String(m.message))), "the panel's error line");
    assert.match(String(error.message), /Kiln settings not applied: permissionTimeout must be a positive number of seconds, at most 86,400, got 0/);
    assert.match(String(error.hint), /kiln\.\* settings/);
  });
});
