/**
 * Extension entry: wires the server, the chat view, the diff provider, the status bar and the
 * commands together. Everything with logic lives in `host/` and `protocol/`.
 */

import * as vscode from "vscode";
import { ChatPanel, VIEW_ID } from "./host/chatPanel";
import { ChatController } from "./host/controller";
import { ProposalDiffs, SCHEME } from "./host/diff";
import { askAboutSelection, explainFile, inlineEdit, selectionContext } from "./host/editorCommands";
import { languageClientFactory } from "./host/languageClient";
import { KilnServer, readSettings } from "./host/server";
import { installSkill, listSkills, searchSkills, showError } from "./host/skills";
import { IndexStatusBar, indexStatusReport } from "./host/statusBar";

let server: KilnServer | undefined;

const NO_FOLDER = "Kiln works on a folder: open one (File > Open Folder) to start it.";
const hasFolder = () => (vscode.workspace.workspaceFolders ?? []).length > 0;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("Kiln");
  const diffs = new ProposalDiffs();
  let controller: ChatController | undefined = undefined;
  const panel = new ChatPanel(
    context.extensionUri,
    (message) => void controller?.handle(message),
    (line) => output.appendLine(line),
  );
  controller = new ChatController((m) => panel.post(m), diffs, () => panel.visible);
  const chat = controller;
  const kiln = new KilnServer(
    languageClientFactory(output, () => kiln.restarted()),
    () => readSettings(vscode.workspace.getConfiguration("kiln")),
    output,
  );
  server = kiln;
  const status = new IndexStatusBar(() => chat.protocol?.indexStatus());
  kiln.onState((state, client) => {
    if (state === "running") {
      if (client) chat.attach(client);
    } else {
      chat.detach(state, state === "failed" ? kiln.problem?.message : undefined);
    }
    status.setServer(state);
  });

  const needProtocol = () => {
    if (!chat.protocol) {
      void vscode.window.showErrorMessage('The Kiln server is not running. Run "Kiln: Restart Server".');
      return undefined;
    }
    return chat.protocol;
  };
  const focusChat = () => vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  const ask = async (a: Parameters<Parameters<typeof explainFile>[0]>[0]) => {
    await focusChat();
    try {
      await chat.send(a.blocks, a.text, a.references);
    } catch (err) {
      showError(err);
    }
  };

  context.subscriptions.push(
    output,
    status,
    chat,
    kiln,
    vscode.window.registerWebviewViewProvider(VIEW_ID, panel, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, diffs),
    vscode.commands.registerCommand("kiln.askAboutSelection", () => askAboutSelection(ask)),
    vscode.commands.registerCommand("kiln.explainFile", () => explainFile(ask)),
    vscode.commands.registerCommand("kiln.newSession", async () => {
      await focusChat();
      await chat.handle({ type: "newSession" });
    }),
    vscode.commands.registerCommand("kiln.stop", () => chat.handle({ type: "cancel" })),
    vscode.commands.registerCommand("kiln.setMode", () => chat.pickMode().catch(showError)),
    vscode.commands.registerCommand("kiln.restartServer", () => kiln.restart()),
    vscode.commands.registerCommand("kiln.skills.search", () => {
      const p = needProtocol();
      return p && searchSkills(p);
    }),
    vscode.commands.registerCommand("kiln.skills.install", () => {
      const p = needProtocol();
      return p && installSkill(p);
    }),
    vscode.commands.registerCommand("kiln.skills.list", () => {
      const p = needProtocol();
      return p && listSkills(p);
    }),
    vscode.commands.registerCommand("kiln.showIndexStatus", async () => {
      if (!hasFolder()) return void vscode.window.showInformationMessage(NO_FOLDER);
      if (kiln.state !== "running") return kiln.restart();
      const s = await status.poll();
      const report = indexStatusReport(s ?? null);
      output.appendLine(report.join("\n"));
      void vscode.window.showInformationMessage(report.join(" · "));
    }),
    vscode.commands.registerCommand("kiln.focusChat", focusChat),
    vscode.commands.registerCommand("kiln.inlineEdit", () => inlineEdit(ask)),
    vscode.commands.registerCommand("kiln.addSelection", async () => {
      const item = selectionContext();
      if (typeof item === "string") return void vscode.window.showWarningMessage(item);
      await focusChat();
      panel.post({ type: "addContext", item });
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("kiln.model")) chat.settingsChanged(readSettings(vscode.workspace.getConfiguration("kiln")).model);
      // The server's command and environment are read when it starts: say so, with the way to apply them.
      if (e.affectsConfiguration("kiln.server") && kiln.state === "running") {
        void vscode.window
          .showInformationMessage("Kiln: the server settings changed. Restart the server to use them.", "Restart")
          .then((choice) => (choice === "Restart" ? kiln.restart() : undefined));
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      if (hasFolder() && kiln.state !== "running") void kiln.start();
    }),
  );
  // Without a folder the server would index (and create .kiln/ in) whatever directory VS Code
  // was started from: ask for a folder instead.
  if (!hasFolder()) {
    chat.detach("no-folder");
    status.setServer("no folder");
    return;
  }
  await kiln.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
