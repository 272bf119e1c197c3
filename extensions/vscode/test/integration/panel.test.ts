/**
 * The built extension against the real server, as a new user drives the panel: a mistyped
 * `/mode`, a session that cannot be loaded, a model picked while a turn runs, settings changed
 * while the server runs, a selection from an untitled buffer. Each time the next question must
 * still work and reach the model with what the user meant.
 */

import assert from "node:assert/strict";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { URI } from "vscode-uri";
import { host, installVscodeModule, vscodeStandIn } from "./editorHost";
import { kilnCli, type makeWorkspace, waitFor } from "./harness";
import { type ActivePanel, activatePanel, scriptedPanel } from "./panelHost";

installVscodeModule();

describe("the panel against the real server", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;
  let release: string;

  before(async () => {
    ({ ws, panel } = await scriptedPanel(
      (home) => {
        release = join(home, "release");
        return [
          { match: "hello", text: "Hi." },
          { match: "hello", text: "Hi." },
          { match: "hello", text: "Hi." },
          { match: "hello", text: "Hi." },
          { match: "hold", wait_for: release },
          { match: "hold", text: "Released." },
          { match: "SCRATCH_MARKER", text: "I see the scratch text." },
          { match: "hold", wait_for: release },
          { match: "hold", text: "Released." },
          { match: "back in", text: "Continued." },
          { match: "propose", text: "Proposing.", tool_calls: [{ name: "edit_file", input: { path: "app.py", old_text: "x = 1", new_text: "x = 2" } }] },
          { match: "app.py", text: "Proposed." },
          { match: "before the reload", text: "Proposing.", tool_calls: [{ name: "edit_file", input: { path: "app.py", old_text: "x = 1", new_text: "x = 3" } }] },
          { match: "app.py", text: "Proposed." },
        ];
      },
      { model: "first-model" },
    ));
  });

  after(async () => {
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  const turns = () => panel.ofType("turn").length;
  async function ask(text: string, context?: unknown[]): Promise<Record<string, unknown>> {
    const before = turns();
    panel.send({ type: "prompt", text, ...(context ? { context } : {}) });
    await waitFor(() => turns() >= before + 2 && panel.ofType("turn").at(-1)?.state === "idle", `turn of ${text}`);
    return panel.ofType("turn").at(-1)!;
  }
  /** A turn held open by the script while the user picks a model; then released to its end. */
  async function pickModelDuringATurn(text: string, model: string): Promise<void> {
    const before = turns();
    panel.send({ type: "prompt", text });
    await waitFor(() => turns() > before && panel.ofType("turn").at(-1)?.state === "running", "turn running");
    panel.send({ type: "setModel", model });
    await waitFor(() => panel.ofType("config").at(-1)?.model === model, "the picker");
    writeFileSync(release, "");
    await waitFor(() => panel.ofType("turn").at(-1)?.state === "idle", "turn end");
  }
  /** The sessions the store holds (`kiln sessions list --json`): their titles and models. */
  const storedSessions = async () =>
    JSON.parse(await kilnCli(["sessions", "list", "--json", "--root", ws.root], { KILN_HOME: ws.home }, ws.root)) as { title: string; model: string }[];
  const answer = () => panel.answer();

  test("Kiln: Set Permission and Edit Mode shows in the panel's pickers; dismissed, it changes nothing", async () => {
    const sessions = panel.ofType("session").length;
    host.picks.push(undefined);
    await host.commands.get("kiln.setMode")!();
    assert.equal(panel.ofType("session").length, sessions, "a dismissed pick started a session");
    host.picks.push("auto-edit", "deferred");
    await host.commands.get("kiln.setMode")!();
    const shown = panel.ofType("config").at(-1);
    assert.deepEqual([shown?.mode, shown?.editMode], ["auto-edit", "deferred"]);
    host.picks.push("ask", "ask");
    await host.commands.get("kiln.setMode")!();
    assert.deepEqual([panel.ofType("config").at(-1)?.mode, panel.ofType("config").at(-1)?.editMode], ["ask", "ask"]);
  });

  test("a mistyped /mode is refused and does not stick: the next sessions still start", async () => {
    const errors = panel.ofType("error").length;
    panel.send({ type: "command", name: "mode", args: "yollo", context: [] });
    await waitFor(() => panel.ofType("error").length > errors, "the refusal");
    assert.equal(panel.ofType("config").at(-1)?.mode, "ask", "the picker shows a mode that does not exist");
    panel.send({ type: "newSession" });
    const stop = await ask("hello");
    assert.equal(stop.stopReason, "end_turn", JSON.stringify(panel.ofType("error").slice(errors)));
  });

  test("a session that cannot be loaded leaves the panel on a session that works", async () => {
    const errors = panel.ofType("error").length;
    panel.send({ type: "loadSession", sessionId: "20200101-000000-deadbeef" });
    await waitFor(() => panel.ofType("error").length > errors, "the load error");
    const stop = await ask("hello again");
    assert.equal(stop.stopReason, "end_turn", JSON.stringify(panel.ofType("error").slice(errors)));
  });

  test("a model picked while a turn runs is not dropped: the session after the turn uses it", async () => {
    await pickModelDuringATurn("hold on", "picked-model");
    await ask("hello model");
    const rows = await storedSessions();
    const latest = rows.find((r: { title: string }) => r.title === "hello model");
    assert.equal(latest?.model, "picked-model", JSON.stringify(rows));
  });

  test("a model picked while a turn runs, then an older session loaded: the question continues that session", async () => {
    const older = panel.ofType("session").at(-1)?.sessionId as string; // the "hello model" session
    rmSync(release, { force: true });
    await pickModelDuringATurn("hold again", "another-model");
    const loads = panel.ofType("sessions").length;
    panel.send({ type: "loadSession", sessionId: older });
    await waitFor(() => panel.ofType("sessions").length > loads, "the session loaded");
    await ask("back in the older one");
    const rows = await storedSessions();
    assert.equal(rows.filter((r: { title: string }) => r.title === "back in the older one").length, 0, "a new session took the question");
  });

  test("kiln.model changed in the settings while running is the model of the next new session", async () => {
    const sessions = panel.ofType("session").length;
    panel.send({ type: "setModel", model: "" }); // back to the setting's model: a new session
    await waitFor(() => panel.ofType("session").length > sessions, "the new session");
    (host.settings.kiln as Record<string, unknown>).model = "second-model";
    host.fireConfigurationChange("kiln.model");
    await waitFor(() => panel.ofType("config").at(-1)?.model === "second-model", "the picker shows the new setting");
    const fresh = panel.ofType("session").length;
    panel.send({ type: "newSession" });
    await waitFor(() => panel.ofType("session").length > fresh, "the session after the change");
    await ask("hello settings");
    const rows = await storedSessions();
    const latest = rows.find((r: { title: string }) => r.title === "hello settings");
    assert.equal(latest?.model, "second-model", JSON.stringify([rows, panel.ofType("error")]));
  });

  test("deferred edits the server lost in a restart leave the panel, and the user is told", async () => {
    panel.send({ type: "setMode", editMode: "deferred" });
    await waitFor(() => panel.ofType("config").at(-1)?.editMode === "deferred", "deferred edits");
    await ask("propose a change");
    const listed = () => panel.ofType("pendingEdits").at(-1)?.edits as unknown[] | undefined;
    await waitFor(() => listed()?.length === 1, "the pending edit in the panel");
    const infos = panel.ofType("info").length;
    const restarts = panel.ofType("server").length;
    await host.commands.get("kiln.restartServer")!();
    await waitFor(() => panel.ofType("server").slice(restarts).some((m) => m.state === "running"), "running again");
    await waitFor(() => listed()?.length === 0, "the lost proposal withdrawn from the panel");
    const told = panel.ofType("info").slice(infos).map((m) => m.message as string);
    assert.ok(told.some((m) => /1 proposed edit .*lost/.test(m)), JSON.stringify(told));
    panel.send({ type: "setMode", editMode: "ask" });
  });

  test("in a multi-root workspace a file of another folder is refused up front, with the reason", async () => {
    const other = join(ws.home, "other");
    mkdirSync(other);
    writeFileSync(join(other, "lib.py"), "y = 2\n");
    host.workspaceFolders = [...host.workspaceFolders, { uri: URI.file(other), name: "other", index: 1 }];
    host.activeTextEditor = {
      document: { uri: URI.file(join(other, "lib.py")), getText: () => "y = 2\n" },
      selection: new vscodeStandIn.Range(0, 0, 0, 5),
    };
    const asked = panel.ofType("userMessage").length;
    await host.commands.get("kiln.explainFile")!();
    await host.commands.get("kiln.addSelection")!();
    const said = host.warnings.filter((w) => /works on the first folder of this workspace \(ws\)/.test(w));
    assert.equal(said.length, 2, host.warnings.join("\n"));
    assert.equal(panel.ofType("userMessage").length, asked, "nothing was sent");
    host.activeTextEditor = undefined;
    host.workspaceFolders = host.workspaceFolders.slice(0, 1);
  });

  test("a change to the server's settings while it runs offers a restart", async () => {
    const server = (host.settings.kiln as { server: { env: Record<string, string> } }).server;
    server.env = { ...server.env, KILN_EXTRA: "1" };
    host.fireConfigurationChange("kiln.server.env");
    await waitFor(() => host.shown.find((m) => /server settings changed\. Restart the server/.test(m)), "the offer");
  });

  test("a selection of an untitled buffer added to the chat reaches the model", async () => {
    const uri = URI.parse("untitled:Untitled-1");
    const text = "first line\nSCRATCH_MARKER = 42\nlast line\n";
    host.untitled.set(uri.toString(), text);
    host.activeTextEditor = {
      document: { uri, getText: () => text, isUntitled: true },
      selection: new vscodeStandIn.Range(1, 0, 1, 10),
    };
    await host.commands.get("kiln.addSelection")!();
    const item = (panel.ofType("addContext").at(-1) as { item: unknown }).item;
    const seen = answer().length;
    await ask("what is in there?", [item]);
    assert.match(answer().slice(seen), /I see the scratch text/);
    host.activeTextEditor = undefined;
    assert.equal(existsSync(join(ws.root, "Untitled-1")), false);
  });

  test("a panel restored after a window reload drops the deferred edits of the old server", async () => {
    panel.send({ type: "setMode", editMode: "deferred" });
    await waitFor(() => panel.ofType("config").at(-1)?.editMode === "deferred", "deferred edits");
    await ask("a change before the reload");
    const shown = panel.ofType("session").at(-1)?.sessionId as string;
    await waitFor(() => (panel.ofType("pendingEdits").at(-1)?.edits as unknown[]).length > 0, "the pending edit");
    // The window reloads: a new extension host and server; the page comes back with its state.
    await panel.extension.deactivate();
    panel = await activatePanel({ restored: shown });
    await waitFor(() => panel.ofType("server").some((m) => m.state === "running"), "the new server");
    const listed = await waitFor(() => panel.ofType("pendingEdits").at(-1), "the pending edits as the new server has them");
    assert.deepEqual(listed.edits, []);
  });
});
