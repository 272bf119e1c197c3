/**
 * The real `vscode-languageclient` behind `KilnServer`: stdio transport, every `file:` document
 * synced (so the agent reads unsaved buffers), `kiln` settings pushed on change, and the crash
 * policy decided by `KilnServer` instead of the client's fixed default.
 */

import { noLinks } from "../protocol/notificationText";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";
import { atMost } from "../protocol/atMost";
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult } from "../protocol/types";
import { applyThenSave } from "./saveEdited";
import type { ClientFactory, ClientHandle } from "./server";

export function languageClientFactory(
  output: vscode.OutputChannel,
  onRunning: () => void,
): ClientFactory {
  return (cmd, initializationOptions, hooks) => {
    const serverOptions: ServerOptions = {
      command: cmd.command,
      args: cmd.args,
      options: { env: cmd.env },
    };
    // The client restarting its crashed server: a stop meanwhile would leave the new process
    // running without a client (a second `kiln lsp` for the life of the window).
    let restarting: Promise<void> | undefined;
    let restarted = () => {};
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      synchronize: { configurationSection: "kiln" },
      initializationOptions,
      outputChannel: output,
      errorHandler: {
        error: (error, _message, count) => {
          hooks.failed(error.message);
          return { action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown };
        },
        closed: () => {
          if (!hooks.closed()) return { action: CloseAction.DoNotRestart, handled: true };
          restarting ??= new Promise<void>((resolve) => (restarted = resolve));
          return { action: CloseAction.Restart };
        },
      },
    };
    const client = new LanguageClient("kiln", "Kiln", serverOptions, clientOptions);
    // The client's own applyEdit handler (version check, then workspace.applyEdit), followed
    // by saving what it edited. Handlers registered here replace the built-in one and are
    // registered again after every restart.
    const builtIn = (client as unknown as {
      handleApplyWorkspaceEdit(p: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult>;
    }).handleApplyWorkspaceEdit.bind(client);
    client.onRequest("workspace/applyEdit", (params: ApplyWorkspaceEditParams) =>
      applyThenSave(
        params,
        builtIn,
        () => vscode.workspace.textDocuments,
        (uri) => vscode.Uri.parse(uri).toString(),
        (message) => void vscode.window.showWarningMessage(noLinks(message)),
      ),
    );
    let started = false;
    client.onDidChangeState((e) => {
      if (e.newState !== State.Running) return;
      restarted();
      restarting = undefined;
      if (started) onRunning();
    });
    const handle: ClientHandle = {
      start: async () => {
        await client.start();
        started = true;
      },
      stop: async () => {
        if (restarting) await atMost(restarting, 15000);
        await client.stop();
      },
      sendRequest: (method, params, token) =>
        token
          ? client.sendRequest(method, params, token as vscode.CancellationToken)
          : client.sendRequest(method, params),
      sendNotification: (method, params) => client.sendNotification(method, params),
      onNotification: (method, handler) => client.onNotification(method, handler as unknown as (p: unknown) => void),
      onRequest: (method, handler) =>
        client.onRequest(method, handler as unknown as (p: unknown, t: vscode.CancellationToken) => unknown),
    };
    return handle;
  };
}
