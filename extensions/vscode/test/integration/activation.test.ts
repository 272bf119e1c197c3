/**
 * The built extension, activated in Node: real `vscode-languageclient`, real `kiln lsp`, the
 * chat driven through the webview message path, and an approved edit applied through
 * `workspace.applyEdit` by the language client. Only the editor is a stand-in.
 */

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { URI } from "vscode-uri";
import { host, installVscodeModule, touched, vscodeStandIn } from "./editorHost";
import { makeWorkspace, python, serverPids, waitFor } from "./harness";
import { activatePanel } from "./panelHost";

installVscodeModule();

// A request sent on a connection whose server was just killed makes vscode-jsonrpc reject a
// promise nobody holds (its async executor rethrows ERR_STREAM_DESTROYED); VS Code only logs
// those. The crash test provokes exactly that, so that one error is counted and tolerated here;
// any other unhandled rejection is kept and fails the suite in \`after\`.
const closedWrites: unknown[] = [];
const otherRejections: unknown[] = [];
function tolerateClosedWrites(): void {
  // Called from `before`: the test runner installs its own listener when the first suite starts.
  process.removeAllListeners("unhandledRejection");
  process.on("unhandledRejection", (reason) => {
    if ((reason as { code?: string })?.code === "ERR_STREAM_DESTROYED") closedWrites.push(reason);
    else otherRejections.push(reason);
  });
}

const APP = 'def greet(name):\n    return "hello " + name  # café ☕\n';

describe("the extension activated against the real server", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let extension: any;
  let delivered: Record<string, unknown>[] = [];
  let send: (m: unknown) => void = () => {};

  before(async () => {
    tolerateClosedWrites();
    ws = makeWorkspace({ "app.py": APP });
    const script = join(ws.home, "script.json");
    writeFileSync(
      script,
      JSON.stringify([
        { match: "stream", text: "Streamed **answer**." },
        {
          match: "rename",
          text: "Renaming.",
          tool_calls: [{ name: "edit_file", input: { path: "app.py", old_text: '"hello "', new_text: '"salut "' } }],
        },
        { match: "edited app.py", text: "Done." },
        { match: "stream again", text: "Back again." },
        { match: 'lines="2-2"', text: "That line returns the greeting." },
      ]),
    );
    host.workspaceFolders = [{ uri: URI.file(ws.root), name: "ws", index: 0 }];
    host.settings = {
      kiln: {
        server: {
          python: python(),
          env: { KILN_PROVIDER: "scripted", KILN_SCRIPT: script, KILN_HOME: ws.home },
          maxRestarts: 2,
        },
        mode: "ask",
        editMode: "ask",
      },
    };
    const panel = await activatePanel();
    extension = panel.extension;
    delivered = panel.delivered;
    send = panel.send;
  });

  after(async () => {
    await extension?.deactivate();
    ws?.cleanup();
    assert.deepEqual(otherRejections, []);
  });

  const ofType = (t: string) => delivered.filter((m) => m.type === t);

  test("the server starts and the panel hears about it; the status bar shows the index", async () => {
    await waitFor(() => ofType("server").some((m) => m.state === "running"), "server running");
    assert.ok(!host.shown.some((m) => m.startsWith("error")), host.shown.join("\n"));
    await waitFor(() => host.statusTexts.some((t) => /Kiln: (\d+ files|indexing)/.test(t)), "index status");
  });

  test("a prompt from the panel streams back and ends the turn", async () => {
    const turns = ofType("turn").length; // "ready" already said the turn is idle
    send({ type: "prompt", text: "stream please" });
    await waitFor(() => ofType("turn").length >= turns + 2 && ofType("turn").at(-1)?.state === "idle", "turn end");
    const text = ofType("update")
      .map((m) => m.update as { sessionUpdate: string; content?: { text?: string } })
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content?.text)
      .join("");
    assert.equal(text, "Streamed **answer**.");
    assert.equal(ofType("turn").at(-1)?.stopReason, "end_turn");
  });

  test("an edit is approved in the panel, applied by the language client and saved", async () => {
    // app.py is open and clean; notes.py is open with unsaved changes of the user's own.
    host.openDocs.set(join(ws.root, "app.py"), { text: APP, dirty: false, version: 1 });
    writeFileSync(join(ws.root, "notes.py"), "saved = 1\n");
    host.openDocs.set(join(ws.root, "notes.py"), { text: "typing = 2\n", dirty: true, version: 3 });
    const turns = ofType("turn").length;
    send({ type: "prompt", text: "rename the greeting" });
    const ask = await waitFor(() => ofType("permission")[0], "permission request");
    send({ type: "permission", requestId: ask.requestId, optionId: "allow_once" });
    await waitFor(() => ofType("turn").length >= turns + 2 && ofType("turn").at(-1)?.state === "idle", "turn end");
    assert.equal(ofType("turn").at(-1)?.stopReason, "end_turn", JSON.stringify([...ofType("error"), ...ofType("update").slice(-4)]));
    assert.equal(host.applied.length, 1);
    // The edit landed in the open document, and the document was saved: the disk has it.
    assert.equal(host.openDocs.get(join(ws.root, "app.py"))?.dirty, false);
    assert.equal(readFileSync(join(ws.root, "app.py"), "utf8"), APP.replace('"hello "', '"salut "'));
    // The user's unrelated unsaved document was not written.
    assert.equal(readFileSync(join(ws.root, "notes.py"), "utf8"), "saved = 1\n");
    assert.equal(host.openDocs.get(join(ws.root, "notes.py"))?.dirty, true);
    host.openDocs.clear();
  });

  test("Ask About Selection sends the selected lines as a reference the model receives", async () => {
    const text = readFileSync(join(ws.root, "app.py"), "utf8");
    host.activeTextEditor = {
      document: { uri: URI.file(join(ws.root, "app.py")), getText: () => text },
      selection: new vscodeStandIn.Range(1, 4, 1, 10),
    };
    host.inputs.push("what does this line do?");
    const turns = ofType("turn").length;
    await host.commands.get("kiln.askAboutSelection")!();
    await waitFor(() => ofType("turn").length >= turns + 2 && ofType("turn").at(-1)?.state === "idle", "turn end");
    // The scripted model only answers this when the request holds the reference to line 2.
    const answer = ofType("update")
      .map((m) => m.update as { sessionUpdate: string; content?: { text?: string } })
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content?.text ?? "")
      .join("");
    assert.match(answer, /That line returns the greeting\./);
    const shown = ofType("userMessage").at(-1) as { text: string; references: { label: string }[] };
    assert.equal(shown.text, "what does this line do?");
    assert.equal(shown.references[0].label.endsWith("app.py:2-2"), true);
    host.activeTextEditor = undefined;
  });

  test("Stop and restart commands exist and the server restarts cleanly", async () => {
    for (const id of ["kiln.askAboutSelection", "kiln.explainFile", "kiln.skills.search", "kiln.restartServer"]) {
      assert.ok(host.commands.has(id), id);
    }
    const before = ofType("server").length;
    await host.commands.get("kiln.restartServer")!();
    await waitFor(() => ofType("server").slice(before).some((m) => m.state === "running"), "running again");
    // Names the stand-in did not implement, for the record (not an assertion on VS Code).
    if (process.env.KILN_SHOW_STANDIN_GAPS) console.log([...touched].sort().join("\n"));
  });

  test("a crashed server is restarted by the language client and the panel comes back", { skip: process.platform !== "linux" }, async () => {
    const [pid] = serverPids();
    assert.ok(pid, "the server is a child of this process");
    const before = ofType("server").length;
    process.kill(pid, "SIGKILL");
    await waitFor(() => ofType("server").slice(before).some((m) => m.state === "starting"), "the panel told of the restart");
    await waitFor(() => ofType("server").slice(before).some((m) => m.state === "running"), "running after the crash");
    const [again] = await waitFor(() => {
      const fresh = serverPids().filter((p) => p !== pid);
      return fresh.length ? fresh : undefined;
    }, "a new server process");
    assert.notEqual(again, pid);
    assert.ok(host.output.some((l) => /restarting \(1\/2\)/.test(l)), host.output.join("\n"));
    // The chat still works on the new process.
    const turns = ofType("turn").length;
    send({ type: "prompt", text: "stream again" });
    await waitFor(() => ofType("turn").length >= turns + 2 && ofType("turn").at(-1)?.state === "idle", "turn end");
  });
});
