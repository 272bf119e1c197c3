/**
 * The chat session as the extension host runs it: webview messages in, `kiln/*` calls out,
 * server updates and permission requests back to the webview (the open questions are kept by
 * `PermissionQuestions`).
 */

import * as vscode from "vscode";
import {
  type CancellationTokenLike,
  KilnProtocol,
  KilnRpcError,
  type RpcConnection,
  selected,
} from "../protocol/client";
import type { ContextItem, HostToWebview, Reference, WebviewToHost } from "../protocol/messages";
import { noLinks } from "../protocol/notificationText";
import {
  PROTOCOL_VERSION,
  type PermissionRequest,
  PermissionResponse,
  PromptBlock,
  ToolCallContent,
  UpdateNotification,
} from "../protocol/types";
import { codeAction, completions, contextBlocks, openWorkspaceFile } from "./composerHost";
import { runCommand } from "./slashCommands";
import { postModels } from "./models";
import type { ProposalDiffs } from "./diff";
import { EDIT_MODE_NAMES, MODE_NAMES, pickModes } from "./modePicker";
import { PermissionQuestions } from "./permissionQuestions";
import { type ListedSessions, SessionHistory } from "./sessionHistory";
import { EditResolutions } from "./editResolutions";

interface Proposal {
  path: string;
  oldText: string | null;
  newText: string;
}

export class ChatController implements vscode.Disposable {
  protocol: KilnProtocol | undefined;
  sessionId: string | null = null;
  running = false;
  /** Stop was pressed during a `/compact` (its answer, `compacted: false`, says no more). */
  private compactStopped = false;
  private pendingEditCount = 0;
  /** What the panel shows while there is no connection. */
  private down: "starting" | "failed" | "no-folder" = "starting";
  /** The model for new sessions chosen in the panel (empty: the `kiln.model` setting). */
  private chosenModel = "";
  /** The `kiln.model` setting, as the server last reported it or the user changed it. */
  private configModel = "";
  /** A model picked while a turn ran: the next question starts a new session with it. */
  private modelPending = false;
  mode = { mode: "ask", editMode: "ask" };
  /** What the user picked in the panel; new sessions get it (else the server's settings). */
  private chosen: { mode?: string; editMode?: string } = {};
  private readonly questions: PermissionQuestions;
  readonly proposals = new Map<string, Proposal>();
  /** The end of the last session change queued (New, Load, a question, a restored panel). */
  private tail: Promise<unknown> = Promise.resolve();
  /** The settings the current session was made with by New, while nothing was asked in it. */
  private fresh: string | null = null;
  /** Ends the turn waiting on a connection that went away (its answer will never come). */
  private lost: () => void = () => {};
  /** Questions sent while another was running or starting, not asked yet: Stop hands them back. */
  private waiting: Draft[] = [];
  /** The tool calls of the deferred edits listed last (their diffs are dropped once resolved). */
  private pendingCalls = new Set<string>();
  /** The stored sessions the history picker lists (newest pages, more on request). */
  private readonly history = new SessionHistory();
  /** Apply / Discard of deferred edits, each proposal once (a double-click is one click). */
  private readonly resolutions = new EditResolutions();

  constructor(
    private readonly post: (message: HostToWebview) => void,
    private readonly diffs: ProposalDiffs,
    /** Whether the chat panel is on screen: a question asked while it is not is announced. */
    private readonly panelVisible: () => boolean = () => true,
  ) {
    this.questions = new PermissionQuestions(post);
  }

  /** The server is up: speak the protocol over its connection. */
  attach(connection: RpcConnection): KilnProtocol {
    this.protocol?.dispose();
    this.protocol = new KilnProtocol(connection, {
      onUpdate: (n) => this.onUpdate(n),
      onPermission: (r, token) => this.onPermission(r, token),
    });
    this.post({ type: "server", state: "running" });
    // Queued: a question sent the moment the server is back waits until its session is.
    const protocol = this.protocol;
    void this.serial(() => this.resume(protocol));
    return this.protocol;
  }

  /** After a restart the new server process has no live sessions: bring the current one back. */
  private async resume(protocol: KilnProtocol): Promise<void> {
    const current = this.sessionId; // taken now: the user may pick another session meanwhile
    try {
      const hello = await protocol.hello();
      const config = hello.config ?? {};
      if (typeof config.mode === "string") this.mode.mode = config.mode;
      if (typeof config.editMode === "string") this.mode.editMode = config.editMode;
      this.configModel = typeof config.model === "string" ? config.model : "";
      this.postConfig();
      void postModels(protocol, this.post);
      if (hello.configError) {
        this.post({
          type: "error",
          message: `Kiln settings not applied: ${hello.configError}`,
          hint: "Fix it in the kiln.* settings; until then the server runs on its defaults.",
        });
      }
      if (hello.protocolVersion !== PROTOCOL_VERSION) {
        this.post({
          type: "error",
          message: `The Kiln server speaks protocol version ${hello.protocolVersion}; this extension speaks ${PROTOCOL_VERSION}.`,
          hint: "Update Kiln or the extension so that both match.",
        });
      }
    } catch {
      // A server without kiln/hello is older than version 1; the calls below will say more.
    }
    if (current) {
      try {
        await protocol.loadSession(current, false);
      } catch (err) {
        this.report(err);
      }
    }
    // Deferred proposals live in the server process: a new one has none of the old one's.
    const waiting = this.pendingEditCount;
    await this.refreshPendingEdits();
    if (waiting > this.pendingEditCount) {
      const lost = waiting - this.pendingEditCount;
      this.info(`The server restarted: ${lost} proposed edit${lost === 1 ? "" : "s"} waiting for review ${lost === 1 ? "was" : "were"} lost. Ask again to have ${lost === 1 ? "it" : "them"} proposed again.`);
    }
    await this.refreshSessions();
  }

  /** The server went away: nothing can be answered any more. */
  detach(state: "starting" | "stopped" | "failed" | "no-folder", message?: string): void {
    this.protocol?.dispose();
    this.protocol = undefined;
    this.lost();
    this.questions.cancelAll();
    if (this.running) {
      this.running = false;
      this.post({ type: "turn", state: "idle", stopReason: "server stopped" });
    }
    this.down = state === "stopped" ? "starting" : state;
    this.post({ type: "server", state, ...(message ? { message } : {}) });
  }

  private require(): KilnProtocol {
    if (!this.protocol) {
      throw new KilnRpcError("The Kiln server is not running.", undefined, 'Run "Kiln: Restart Server".');
    }
    return this.protocol;
  }

  private report(err: unknown): void {
    const e = KilnRpcError.from(err);
    this.post({ type: "error", message: e.message, ...(e.hint ? { hint: e.hint } : {}) });
  }

  async handle(message: WebviewToHost): Promise<void> {
    try {
      switch (message.type) {
        case "ready":
          await this.serial(() => this.ready(message.sessionId ?? null));
          return;
        case "prompt": {
          const refs = (message.context ?? []).map((c) => ({ uri: c.uri, label: c.label }));
          const draft = { text: message.text, context: message.context ?? [] };
          await this.send([{ type: "text", text: message.text }, ...contextBlocks(message.context)], message.text, refs, draft);
          return;
        }
        case "command":
          await runCommand(this, this.require(), message.name, message.args, message.context ?? []);
          return;
        case "complete": {
          const items = this.protocol ? await completions(this.protocol, message.trigger, message.query) : [];
          this.post({ type: "completions", id: message.id, items });
          return;
        }
        case "openFile": {
          const problem = await openWorkspaceFile(message.path, message.line);
          if (problem) this.post({ type: "error", message: problem });
          return;
        }
        case "codeAction": {
          const said = await codeAction(message.action, message.code, message.target);
          if (said) this.post({ type: "info", message: said });
          return;
        }
        case "setMode":
          await this.setMode(message.mode, message.editMode);
          return;
        case "setModel":
          await this.setModel(message.model);
          return;
        case "openFolder":
          await vscode.commands.executeCommand("vscode.openFolder");
          return;
        case "cancel":
          await this.stop();
          return;
        case "permission": {
          const answer = selected(message.optionId);
          this.questions.answer(message.requestId, message.newText !== undefined ? { ...answer, _meta: { newText: message.newText } } : answer);
          return;
        }
        case "newSession":
          await this.newSession();
          return;
        case "listSessions":
          await this.refreshSessions();
          return;
        case "olderSessions":
          await this.olderSessions();
          return;
        case "loadSession":
          await this.loadSession(message.sessionId);
          return;
        case "openDiff": {
          const p = this.proposals.get(message.toolCallId);
          if (p) await this.diffs.show(message.toolCallId, p.path, p.oldText, p.newText);
          else this.post({ type: "error", message: "That proposal is no longer available." });
          return;
        }
        case "resolveEdit": {
          const { proposalId, decision, newText } = message;
          if (await this.resolutions.resolve(this.require(), proposalId, decision, newText, this.post)) {
            await this.refreshPendingEdits();
          }
          return;
        }
        case "openLocation": {
          // Tool cards carry absolute paths; only files inside the workspace are opened.
          const problem = await openWorkspaceFile(message.path, message.line);
          if (problem) this.post({ type: "error", message: problem });
          return;
        }
      }
    } catch (err) {
      this.report(err);
    }
  }

  /**
   * A panel (re)opened: tell it what holds now — the server, whether a turn runs, the open
   * questions. A panel restored after a window reload shows the transcript of a session this
   * host does not know yet: it becomes the current session, so the next question continues it.
   */
  private async ready(shown: string | null): Promise<void> {
    this.post({ type: "server", state: this.protocol ? "running" : this.down });
    this.post({ type: "turn", state: this.running ? "running" : "idle" });
    this.questions.repost();
    if (shown && !this.sessionId && !this.running) {
      this.sessionId = shown;
      if (this.protocol) {
        try {
          await this.protocol.loadSession(shown, false);
        } catch {
          this.sessionId = null;
          this.info("The session shown here could not be loaded again: the next question starts a new one.");
        }
        // The deferred edits the panel kept belonged to the old server: show this one's.
        await this.refreshPendingEdits();
      }
    }
    if (this.protocol) await this.refreshSessions();
  }

  async refreshSessions(): Promise<void> {
    if (!this.protocol) return;
    try {
      this.postSessions(await this.history.refresh(this.protocol));
    } catch (err) {
      this.report(err);
    }
  }

  /** The history picker's "Load older sessions…": the next page joins the list. */
  private async olderSessions(): Promise<void> {
    this.postSessions(await this.history.older(this.require()));
  }

  private postSessions({ sessions, more }: ListedSessions): void {
    this.post({
      type: "sessions",
      sessions: sessions.map((s) => ({ sessionId: s.sessionId, title: s.title, updatedAt: s.updatedAt })),
      more,
    });
  }

  /** Deferred proposals of the current session, for the panel's Apply/Discard list. */
  async refreshPendingEdits(): Promise<void> {
    if (!this.protocol || !this.sessionId) return;
    try {
      const { edits } = await this.protocol.listEdits(this.sessionId);
      for (const e of edits) {
        this.proposals.set(e.toolCallId, { path: e.path, oldText: e.oldText, newText: e.newText });
      }
      this.pendingEditCount = edits.length;
      const listed = new Set(edits.map((e) => e.toolCallId));
      for (const id of this.pendingCalls) if (!listed.has(id)) this.diffs.drop(id);
      this.pendingCalls = listed;
      const shown = edits.map(({ proposalId, toolCallId, path, oldText, newText }) => ({ proposalId, toolCallId, path, oldText, newText }));
      this.post({ type: "pendingEdits", edits: shown });
    } catch (err) {
      this.report(err);
    }
  }

  /**
   * Change what the agent may do without asking (and how edits land): for the current session
   * and the next ones, as the panel's pickers do (which then show it).
   */
  async pickMode(): Promise<void> {
    this.require();
    const picked = await pickModes();
    if (!picked) return;
    await this.setMode(picked.mode, picked.editMode);
    void vscode.window.showInformationMessage(`Kiln: mode ${this.mode.mode}, edits ${this.mode.editMode}.`);
  }

  info(message: string): void {
    this.post({ type: "info", message });
  }

  /** The model new sessions get: the one picked in the panel, else the setting's. */
  get model(): string {
    return this.chosenModel || this.configModel;
  }

  private postConfig(): void {
    this.post({ type: "config", ...this.mode, model: this.model });
  }

  /** The `kiln` settings changed: the model shown for (and given to) new sessions follows. */
  settingsChanged(model: string): void {
    this.configModel = model;
    this.postConfig();
  }

  /**
   * The panel's mode pickers: for the current session, and for the next ones. A name that is
   * no mode is refused before anything keeps it (it would make every new session fail).
   */
  async setMode(mode?: string, editMode?: string): Promise<void> {
    const wrong = mode && !MODE_NAMES.includes(mode) ? mode : editMode && !EDIT_MODE_NAMES.includes(editMode) ? editMode : "";
    if (wrong) {
      this.postConfig(); // the picker goes back to what holds
      throw new KilnRpcError(
        `There is no mode "${wrong}".`,
        undefined,
        `Modes: ${MODE_NAMES.join(", ")}; edit modes: ${EDIT_MODE_NAMES.join(", ")}.`,
      );
    }
    let next = { mode: mode ?? this.mode.mode, editMode: editMode ?? this.mode.editMode };
    if (this.sessionId && this.protocol) {
      try {
        const done = await this.protocol.setMode(this.sessionId, mode, editMode);
        next = { mode: done.mode, editMode: done.editMode };
      } catch (err) {
        this.postConfig();
        throw err;
      }
    }
    this.chosen = { ...this.chosen, ...(mode ? { mode } : {}), ...(editMode ? { editMode } : {}) };
    this.mode = next;
    this.postConfig();
  }

  /**
   * A session keeps its model: choosing another starts a new session with it — now, or, while
   * a turn runs, with the next question (the answer being read stays on screen until then).
   */
  async setModel(model: string): Promise<void> {
    this.chosenModel = model;
    this.postConfig();
    if (!this.sessionId) return;
    const name = model || "(default)";
    if (this.running) {
      this.modelPending = true;
      this.info(`Model ${name}: the next question starts a new session with it.`);
      return;
    }
    await this.newSession();
    this.info(`Model ${name}: a new session started.`);
  }

  /** Free the current session on the server, unless it still holds deferred edits to review. */
  private async closeCurrent(protocol: KilnProtocol): Promise<void> {
    if (!this.sessionId || this.pendingEditCount > 0) return;
    try {
      await protocol.closeSession(this.sessionId);
    } catch {
      // Not live any more, or a server without kiln/session/close: nothing to free.
    }
  }

  /**
   * Session changes run one at a time, in the order the user asked for them: a double-click on
   * New, or a second question sent before the first one's session exists, would otherwise make
   * two sessions. Stop, answers to questions and completions never wait here.
   */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** A turn still runs: New and Load are refused at once rather than queued behind it. */
  private idle(): void {
    if (this.running) throw new KilnRpcError("A turn is still running.", undefined, "Stop it first.");
  }

  async newSession(): Promise<string> {
    this.idle();
    return this.serial(() => this.startSession());
  }

  /** A new session; New again on one it made and nothing was asked in keeps that one. */
  private async startSession(): Promise<string> {
    this.idle();
    const settings = JSON.stringify([this.chosen, this.model]);
    if (this.sessionId && this.fresh === settings) {
      this.post({ type: "session", sessionId: this.sessionId, title: "New session" });
      return this.sessionId;
    }
    await this.closeCurrent(this.require());
    const created = await this.require().newSession({ ...this.chosen, ...(this.chosenModel ? { model: this.chosenModel } : {}) });
    this.modelPending = false;
    this.switchTo(created.sessionId);
    this.fresh = settings;
    this.mode = { mode: created.mode ?? this.mode.mode, editMode: created.editMode ?? this.mode.editMode };
    this.postConfig();
    this.post({ type: "session", sessionId: created.sessionId, title: "New session" });
    return created.sessionId;
  }

  /** `sessionId` is now the current session: what was kept for the previous one goes. */
  private switchTo(sessionId: string | null): void {
    this.sessionId = sessionId;
    this.fresh = null;
    this.proposals.clear();
    this.pendingCalls.clear();
    this.diffs.clear();
  }

  async loadSession(sessionId: string): Promise<void> {
    this.idle();
    return this.serial(() => this.load(sessionId));
  }

  private async load(sessionId: string): Promise<void> {
    this.idle();
    const protocol = this.require();
    const previous = this.sessionId;
    if (sessionId !== previous) await this.closeCurrent(protocol);
    // The replay streams as updates before the answer; the view must already expect them.
    this.switchTo(sessionId);
    this.modelPending = false; // a session chosen from the history keeps its own model
    this.post({ type: "session", sessionId, title: "" });
    try {
      await protocol.loadSession(sessionId, true);
    } catch (err) {
      // Not loadable (deleted, another workspace's): back to the session shown before, or to
      // none, so the next question does not go to a session the server does not have.
      this.switchTo(null);
      this.post({ type: "session", sessionId: null, title: "" });
      if (previous && previous !== sessionId) await this.load(previous).catch(() => undefined);
      throw err;
    }
    await this.refreshSessions();
    await this.refreshPendingEdits();
  }

  /**
   * `/compact` holds the session as a turn does (PROTOCOL.md): the panel shows it running,
   * questions sent meanwhile wait behind it, and Stop cancels it with nothing compacted.
   */
  async compact(): Promise<void> {
    this.idle();
    return this.serial(async () => {
      const sessionId = this.sessionId;
      if (!sessionId) return this.info("Nothing to compact yet.");
      const protocol = this.require();
      this.running = true;
      this.compactStopped = false;
      this.post({ type: "turn", state: "running" });
      const done = await protocol.compact(sessionId).finally(() => {
        if (!this.running) return; // the server went away: the panel was told
        this.running = false;
        this.post({ type: "turn", state: "idle" });
      });
      if (done.compacted) this.info(`Compacted: ${done.beforeTokens} → ${done.afterTokens} tokens.`);
      else this.info(this.compactStopped ? "Compaction stopped: the conversation is as it was." : "Nothing to compact yet.");
    });
  }

  /** Send one prompt in the current session (creating one first if needed). `draft` is what
   *  goes back to the question box if Stop is pressed before it is asked. */
  async send(
    blocks: PromptBlock[],
    text: string,
    references: Reference[],
    draft: Draft = { text, context: [] },
  ): Promise<string> {
    const entry = { ...draft };
    this.waiting.push(entry);
    const drop = () => (this.waiting = this.waiting.filter((w) => w !== entry));
    return this.serial(async () => {
      if (!this.waiting.includes(entry)) return "cancelled"; // handed back by Stop
      // The first question waits for its session (slow while the server starts): it stays a
      // waiting question until then, so Stop meanwhile hands it back instead of asking it.
      let sessionId: string;
      try {
        sessionId = this.sessionId && !this.modelPending ? this.sessionId : await this.startSession();
      } catch (err) {
        drop();
        throw err;
      }
      if (!this.waiting.includes(entry)) return "cancelled";
      drop();
      return this.turn(sessionId, blocks, text, references);
    });
  }

  /**
   * Stop: the running turn is cancelled, and questions sent behind it are not asked after it
   * (that would start work the user just stopped): their text and pills go back to the
   * question box, to send again or drop.
   */
  private async stop(): Promise<void> {
    const held = this.waiting.splice(0);
    if (held.length) {
      const context = held.flatMap((d) => d.context).filter((c, i, all) => all.findIndex((x) => x.uri === c.uri && x.label === c.label) === i);
      this.post({ type: "draft", text: held.map((d) => d.text).join("\n\n"), context });
      const n = held.length === 1 ? "1 question" : `${held.length} questions`;
      this.info(`Stopped: ${n} waiting was not asked; ${held.length === 1 ? "its text is" : "their text is"} back in the question box.`);
    }
    if (this.sessionId && this.running) {
      this.compactStopped = true;
      await this.require().cancel(this.sessionId);
    }
  }

  private async turn(sessionId: string, blocks: PromptBlock[], text: string, references: Reference[]): Promise<string> {
    const protocol = this.require();
    this.fresh = null;
    this.running = true;
    this.post({ type: "userMessage", text, references });
    this.post({ type: "turn", state: "running" });
    let stopReason = "error";
    try {
      const gone = new Promise<never>((_, reject) => (this.lost = () => reject(new Error("server stopped"))));
      stopReason = (await Promise.race([protocol.prompt(sessionId, blocks), gone])).stopReason;
    } catch (err) {
      // The server went away mid-turn: the panel was told so ("server stopped"); the
      // connection's own words for the lost answer would only repeat it, less clearly.
      if (this.protocol !== protocol) return "server stopped";
      this.report(err);
    } finally {
      if (this.running) {
        this.running = false;
        this.post({ type: "turn", state: "idle", stopReason });
      }
    }
    void this.refreshSessions();
    await this.refreshPendingEdits();
    return stopReason;
  }

  private remember(toolCallId: string, content: unknown): void {
    if (!Array.isArray(content)) return;
    for (const c of content as ToolCallContent[]) {
      if (c?.type === "diff" && typeof c.path === "string" && typeof c.newText === "string") {
        this.proposals.set(toolCallId, { path: c.path, oldText: c.oldText ?? null, newText: c.newText });
      }
    }
  }

  private onUpdate(n: UpdateNotification): void {
    const u = n.update;
    if (typeof u?.toolCallId === "string") this.remember(u.toolCallId, u.content);
    if (n.sessionId === this.sessionId) this.post({ type: "update", sessionId: n.sessionId, update: u });
  }

  private onPermission(request: PermissionRequest, token: CancellationTokenLike): Promise<PermissionResponse> {
    this.remember(request.toolCall.toolCallId, request.toolCall.content);
    const answer = this.questions.ask(request, token);
    // Answered or withdrawn: the diff documents of the question are not needed any more.
    void answer.finally(() => this.diffs.drop(request.toolCall.toolCallId));
    if (!this.panelVisible()) {
      // The turn waits for this answer (until the permission timeout refuses the action):
      // a user looking elsewhere must hear of it, not find a refusal minutes later.
      void vscode.window
        .showWarningMessage(`Kiln is waiting for your answer: allow ${noLinks(request.toolCall.title)}?`, "Show")
        .then((choice) => {
          if (choice === "Show") void vscode.commands.executeCommand("kiln.chat.focus");
        });
    }
    return answer;
  }

  get pendingPermissions(): number {
    return this.questions.size;
  }

  dispose(): void {
    this.detach("stopped");
  }
}

/** A question as the user wrote it, to hand back unasked. */
interface Draft {
  text: string;
  context: ContextItem[];
}
