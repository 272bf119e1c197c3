/**
 * Typed calls and handlers for the `kiln/*` methods over any JSON-RPC connection.
 *
 * The extension hands it a `vscode-languageclient` client; the integration test hands it a
 * plain `vscode-jsonrpc` connection to a real `kiln lsp`. Both fit `RpcConnection`, so the code
 * that speaks the protocol is the same in the editor and in the test.
 */

import {
  type ApplyWorkspaceEditParams,
  type ApplyWorkspaceEditResult,
  type CommandItem,
  type MentionItem,
  type HelloResult,
  type IndexStatus,
  type InstallResult,
  type LoadSessionResult,
  METHODS,
  type NewSessionResult,
  type ModelList,
  type PendingEdit,
  type PermissionRequest,
  type PermissionResponse,
  type PromptBlock,
  type PromptResult,
  type SessionPage,
  type SkillInfo,
  type UpdateNotification,
} from "./types";

export interface Disposable {
  dispose(): void;
}

export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): Disposable;
}

/** The part of a JSON-RPC connection the protocol needs (LanguageClient and MessageConnection). */
export interface RpcConnection {
  sendRequest(method: string, params: unknown, token?: CancellationTokenLike): Promise<unknown>;
  sendNotification(method: string, params: unknown): Promise<void> | void;
  onNotification(method: string, handler: (params: never) => void): Disposable;
  onRequest(
    method: string,
    handler: (params: never, token: CancellationTokenLike) => unknown,
  ): Disposable;
}

/** A JSON-RPC error answer, with the server's hint (`data.hint`) kept apart from the message. */
export class KilnRpcError extends Error {
  constructor(
    message: string,
    readonly code: number | undefined,
    readonly hint: string,
    /** The error's whole `data` object (method-specific fields, e.g. an install's `review`). */
    readonly data: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "KilnRpcError";
  }

  static from(err: unknown): KilnRpcError {
    if (err instanceof KilnRpcError) return err;
    const e = err as { message?: unknown; code?: unknown; data?: unknown };
    const message = typeof e?.message === "string" ? e.message : String(err);
    const code = typeof e?.code === "number" ? e.code : undefined;
    const data = e?.data && typeof e.data === "object" ? (e.data as Record<string, unknown>) : {};
    const hint = typeof data.hint === "string" ? data.hint : "";
    return new KilnRpcError(message, code, hint, data);
  }
}

export type PermissionHandler = (
  request: PermissionRequest,
  token: CancellationTokenLike,
) => Promise<PermissionResponse>;
export type ApplyEditHandler = (
  params: ApplyWorkspaceEditParams,
) => Promise<ApplyWorkspaceEditResult> | ApplyWorkspaceEditResult;

export interface ProtocolHandlers {
  onUpdate?: (notification: UpdateNotification) => void;
  onPermission?: PermissionHandler;
  /** Only for connections without an editor behind them; LanguageClient applies edits itself. */
  onApplyEdit?: ApplyEditHandler;
}

export const CANCELLED: PermissionResponse = { outcome: { outcome: "cancelled" } };

export function selected(optionId: string): PermissionResponse {
  return { outcome: { outcome: "selected", optionId } };
}

export class KilnProtocol implements Disposable {
  private readonly subscriptions: Disposable[] = [];

  constructor(
    private readonly connection: RpcConnection,
    handlers: ProtocolHandlers = {},
  ) {
    const { onUpdate, onPermission, onApplyEdit } = handlers;
    if (onUpdate) {
      this.subscriptions.push(
        connection.onNotification(METHODS.sessionUpdate, ((p: UpdateNotification) =>
          onUpdate(p)) as (params: never) => void),
      );
    }
    if (onPermission) {
      this.subscriptions.push(
        connection.onRequest(METHODS.requestPermission, ((
          p: PermissionRequest,
          token: CancellationTokenLike,
        ) => onPermission(p, token)) as (params: never, token: CancellationTokenLike) => unknown),
      );
    }
    if (onApplyEdit) {
      this.subscriptions.push(
        connection.onRequest(METHODS.applyEdit, ((p: ApplyWorkspaceEditParams) =>
          onApplyEdit(p)) as (params: never) => unknown),
      );
    }
  }

  private async call<T>(method: string, params: unknown, token?: CancellationTokenLike): Promise<T> {
    try {
      // Never pass an undefined token: vscode-jsonrpc would send [params, null] as positional.
      const pending = token
        ? this.connection.sendRequest(method, params, token)
        : this.connection.sendRequest(method, params);
      return (await pending) as T;
    } catch (err) {
      throw KilnRpcError.from(err);
    }
  }

  hello(): Promise<HelloResult> {
    return this.call(METHODS.hello, {});
  }

  newSession(options: { cwd?: string; mode?: string; editMode?: string; model?: string } = {}) {
    return this.call<NewSessionResult>(METHODS.sessionNew, options);
  }

  loadSession(sessionId: string, replay = true) {
    return this.call<LoadSessionResult>(METHODS.sessionLoad, { sessionId, replay });
  }

  /** One page of the stored sessions, newest first; `nextCursor` (absent on the last page) asks
   *  for the next. */
  listSessions(cursor?: string): Promise<SessionPage> {
    return this.call<SessionPage>(METHODS.sessionList, cursor === undefined ? {} : { cursor });
  }

  prompt(sessionId: string, prompt: PromptBlock[] | string, token?: CancellationTokenLike) {
    return this.call<PromptResult>(METHODS.sessionPrompt, { sessionId, prompt }, token);
  }

  /** Soft cancel: the pending prompt then resolves with `stopReason: "cancelled"`. */
  async cancel(sessionId: string): Promise<void> {
    await this.connection.sendNotification(METHODS.sessionCancel, { sessionId });
  }

  /** Free a live session on the server (it stays stored and can be loaded again). */
  closeSession(sessionId: string) {
    return this.call<{ closed: boolean }>(METHODS.sessionClose, { sessionId });
  }

  setMode(sessionId: string, mode?: string, editMode?: string) {
    return this.call<{ mode: string; editMode: string }>(METHODS.sessionSetMode, {
      sessionId,
      mode,
      editMode,
    });
  }

  /** `newText` (accept only): the file as the user kept it, some hunks left out. */
  resolveEdit(proposalId: string, decision: "accept" | "reject", newText?: string) {
    return this.call<{ proposalId: string; outcome: string }>(METHODS.editResolve, {
      proposalId,
      decision,
      ...(newText !== undefined ? { newText } : {}),
    });
  }

  listModels() {
    return this.call<ModelList>(METHODS.modelsList, {});
  }

  listEdits(sessionId?: string) {
    return this.call<{ edits: PendingEdit[] }>(METHODS.editList, sessionId ? { sessionId } : {});
  }

  indexStatus() {
    return this.call<IndexStatus>(METHODS.indexStatus, {});
  }

  contextShow(sessionId: string) {
    return this.call<Record<string, unknown>>(METHODS.contextShow, { sessionId });
  }

  completeMentions(query: string, limit = 20) {
    return this.call<{ items: MentionItem[]; indexed: boolean }>(METHODS.completeMentions, { query, limit });
  }

  completeCommands(query = "") {
    return this.call<{ commands: CommandItem[] }>(METHODS.completeCommands, { query });
  }

  useSkill(name: string) {
    return this.call<{ name: string; description: string; block: PromptBlock }>(METHODS.skillsUse, { name });
  }

  compact(sessionId: string) {
    return this.call<{ compacted: boolean; beforeTokens?: number; afterTokens?: number }>(
      METHODS.sessionCompact,
      { sessionId },
    );
  }

  async listSkills(): Promise<{ skills: SkillInfo[]; warnings: unknown[] }> {
    return this.call(METHODS.skillsList, {});
  }

  searchSkills(query: string, limit = 20) {
    return this.call<{ skills?: Record<string, unknown>[]; [key: string]: unknown }>(
      METHODS.skillsSearch,
      { query, limit },
    );
  }

  installSkill(spec: string, opts: { scope?: "project" | "user"; yes?: boolean } = {}) {
    return this.call<InstallResult>(METHODS.skillsInstall, { spec, ...opts });
  }

  removeSkill(id: string, scope: "project" | "user" = "project") {
    return this.call<{ id: string; path: string }>(METHODS.skillsRemove, { id, scope });
  }

  dispose(): void {
    for (const s of this.subscriptions.splice(0)) s.dispose();
  }
}
