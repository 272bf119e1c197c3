/**
 * The chat transcript as data: session updates and host messages folded into a view model.
 *
 * The webview renders this and nothing else, so what the user sees for a given stream of
 * updates can be checked without a DOM. Streaming chunks append to the last message of the
 * same kind; tool calls are keyed by id so later updates change the card in place.
 */

import type { HostToWebview, Reference } from "./messages";

export interface ToolCard {
  kind: "tool";
  id: string;
  title: string;
  toolKind: string;
  status: string;
  output: string;
  diffs: { path: string }[];
  locations: { path: string; line?: number }[];
}

export type Entry =
  | { kind: "user"; text: string; references: Reference[] }
  | { kind: "agent"; text: string }
  | { kind: "thought"; text: string }
  | ToolCard
  | { kind: "notice"; level: "info" | "error"; text: string };

export interface PlanEntry {
  content: string;
  status: string;
}

export interface UsageLine {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
}

export interface PermissionPrompt {
  requestId: string;
  title: string;
  reason: string;
  /** What a yes approves, as the server words it (the command line and its parts, network). */
  detail: string;
  toolCallId: string;
  hasDiff: boolean;
  /** Whole-file texts of the proposed edit, reviewed hunk by hunk in the card. */
  diffs: { path: string; oldText: string; newText: string }[];
  /** Asked while the agent was acting on external content (web, command output): say so. */
  fromExternal: boolean;
  options: { optionId: string; name: string; kind: string }[];
}

export interface ChatState {
  sessionId: string | null;
  title: string;
  entries: Entry[];
  plan: PlanEntry[];
  usage: UsageLine | null;
  running: boolean;
  permissions: PermissionPrompt[];
  sessions: { sessionId: string; title: string; updatedAt?: string }[];
  /** Older sessions follow those listed (the history offers "Load older sessions…"). */
  moreSessions: boolean;
  server: { state: string; message?: string };
  pendingEdits: { proposalId: string; toolCallId: string; path: string; oldText?: string | null; newText?: string }[];
  config: { mode: string; editMode: string; model: string };
  /** The model picker's choices (from `kiln/models/list`). */
  models: { ids: string[]; note?: string };
}

export function initialState(): ChatState {
  return {
    sessionId: null,
    title: "",
    entries: [],
    plan: [],
    usage: null,
    running: false,
    permissions: [],
    sessions: [],
    moreSessions: false,
    server: { state: "starting" },
    pendingEdits: [],
    config: { mode: "ask", editMode: "ask", model: "" },
    models: { ids: [] },
  };
}

type Obj = Record<string, unknown>;
const str = (v: unknown, fallback = ""): string => (typeof v === "string" ? v : fallback);
const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const obj = (v: unknown): Obj => (v && typeof v === "object" ? (v as Obj) : {});

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .map((c) => obj(obj(c).content).text)
    .filter((t): t is string => typeof t === "string")
    .join("\n");
}

function diffsOf(content: unknown): { path: string }[] {
  if (!Array.isArray(content)) return [];
  return content.filter((c) => obj(c).type === "diff").map((c) => ({ path: str(obj(c).path) }));
}

function appendText(entries: Entry[], kind: "agent" | "thought" | "user", text: string): Entry[] {
  const last = entries[entries.length - 1];
  if (last && last.kind === kind) {
    return [...entries.slice(0, -1), { ...last, text: last.text + text }];
  }
  if (kind === "user") return [...entries, { kind, text, references: [] }];
  return [...entries, { kind, text }];
}

function upsertTool(entries: Entry[], id: string, patch: (card: ToolCard) => ToolCard): Entry[] {
  const i = entries.findIndex((e) => e.kind === "tool" && e.id === id);
  if (i >= 0) {
    const next = entries.slice();
    next[i] = patch(entries[i] as ToolCard);
    return next;
  }
  const blank: ToolCard = {
    kind: "tool",
    id,
    title: id,
    toolKind: "other",
    status: "pending",
    output: "",
    diffs: [],
    locations: [],
  };
  return [...entries, patch(blank)];
}

/** Fold one ACP-shaped session update into the state. Unknown kinds are ignored. */
export function applyUpdate(state: ChatState, update: Obj): ChatState {
  const kind = str(update.sessionUpdate);
  switch (kind) {
    case "agent_message_chunk":
      return { ...state, entries: appendText(state.entries, "agent", str(obj(update.content).text)) };
    case "agent_thought_chunk":
      return {
        ...state,
        entries: appendText(state.entries, "thought", str(obj(update.content).text)),
      };
    case "user_message_chunk":
      return { ...state, entries: appendText(state.entries, "user", str(obj(update.content).text)) };
    case "tool_call":
    case "tool_call_update": {
      const id = str(update.toolCallId);
      if (!id) return state;
      const entries = upsertTool(state.entries, id, (card) => {
        const output = contentText(update.content);
        const diffs = diffsOf(update.content);
        const locations = Array.isArray(update.locations)
          ? update.locations.map((l) => ({ path: str(obj(l).path), line: obj(l).line as number }))
          : card.locations;
        return {
          ...card,
          title: str(update.title, card.title),
          toolKind: str(update.kind, card.toolKind),
          status: str(update.status, card.status),
          output: output ? output : card.output,
          diffs: diffs.length ? diffs : card.diffs,
          locations,
        };
      });
      return { ...state, entries };
    }
    case "plan":
      return {
        ...state,
        plan: (Array.isArray(update.entries) ? update.entries : []).map((e) => ({
          content: str(obj(e).content),
          status: str(obj(e).status, "pending"),
        })),
      };
    case "usage_update": {
      // A live update carries one step's tokens and the session's cost so far; a loaded
      // session's replay ends with its totals (`_meta.totals`). The line shows the session's sum.
      const meta = obj(update._meta);
      const before = meta.totals === true ? null : state.usage;
      return {
        ...state,
        usage: {
          inputTokens: (before?.inputTokens ?? 0) + num(meta.inputTokens),
          outputTokens: (before?.outputTokens ?? 0) + num(meta.outputTokens),
          cacheReadTokens: (before?.cacheReadTokens ?? 0) + num(meta.cacheReadTokens),
          cacheWriteTokens: (before?.cacheWriteTokens ?? 0) + num(meta.cacheWriteTokens),
          costUsd: num(obj(update.cost).amount),
        },
      };
    }
    case "error": {
      const hint = str(update.hint);
      const text = str(update.message) + (hint ? ` — ${hint}` : "");
      return { ...state, entries: [...state.entries, { kind: "notice", level: "error", text }] };
    }
    case "status":
    case "compaction":
      return {
        ...state,
        entries: [
          ...state.entries,
          {
            kind: "notice",
            level: "info",
            text: kind === "status" ? str(update.text) : "The conversation was compacted to fit the context window.",
          },
        ],
      };
    case "memory_proposal":
      return {
        ...state,
        entries: [
          ...state.entries,
          { kind: "notice", level: "info", text: `Kiln proposes to remember: ${str(update.text)}` },
        ],
      };
    case "refusal":
      return {
        ...state,
        entries: [
          ...state.entries,
          { kind: "notice", level: "info", text: `Refused ${str(update.tool)}: ${str(update.reason)}` },
        ],
      };
    default:
      return state;
  }
}

/** Fold one host message into the state. */
export function reduce(state: ChatState, message: HostToWebview): ChatState {
  switch (message.type) {
    case "session":
      return {
        ...initialState(),
        sessions: state.sessions,
        moreSessions: state.moreSessions,
        pendingEdits: [],
        server: state.server,
        config: state.config,
        models: state.models, // the server's model list is not per session
        sessionId: message.sessionId,
        title: message.title,
      };
    case "update":
      if (state.sessionId && message.sessionId !== state.sessionId) return state;
      return applyUpdate(state, message.update);
    case "userMessage":
      return {
        ...state,
        entries: [
          ...state.entries,
          { kind: "user", text: message.text, references: message.references },
        ],
      };
    case "permission": {
      const tc = message.toolCall as Obj;
      const prompt: PermissionPrompt = {
        requestId: message.requestId,
        title: message.toolCall.title,
        reason: str(obj(tc._meta).reason),
        detail: str(obj(tc._meta).detail),
        toolCallId: message.toolCall.toolCallId,
        hasDiff: diffsOf(tc.content).length > 0,
        diffs: Array.isArray(tc.content)
          ? tc.content
              .filter((c) => obj(c).type === "diff")
              .map((c) => ({ path: str(obj(c).path), oldText: str(obj(c).oldText), newText: str(obj(c).newText) }))
          : [],
        fromExternal: obj(tc._meta).fromExternal === true,
        options: message.options,
      };
      // Asked again (the host repeats open questions to a reopened panel): one card.
      const others = state.permissions.filter((p) => p.requestId !== prompt.requestId);
      return { ...state, permissions: [...others, prompt] };
    }
    case "permissionClosed":
      return {
        ...state,
        permissions: state.permissions.filter((p) => p.requestId !== message.requestId),
      };
    case "turn":
      return {
        ...state,
        running: message.state === "running",
        permissions: message.state === "idle" ? [] : state.permissions,
        entries:
          message.state === "idle" && message.stopReason && message.stopReason !== "end_turn"
            ? [...state.entries, { kind: "notice", level: "info", text: `Stopped: ${message.stopReason}` }]
            : state.entries,
      };
    case "sessions":
      return { ...state, sessions: message.sessions, moreSessions: message.more ?? false };
    case "pendingEdits":
      return { ...state, pendingEdits: message.edits };
    case "models":
      return { ...state, models: { ids: message.ids, note: message.note } };
    case "server":
      return { ...state, server: { state: message.state, message: message.message } };
    case "config":
      return { ...state, config: { mode: message.mode, editMode: message.editMode, model: message.model } };
    case "info":
      return { ...state, entries: [...state.entries, { kind: "notice", level: "info", text: message.message }] };
    case "completions":
    case "addContext":
    case "draft":
      return state; // the composer's own business, not the transcript's
    case "error": {
      const text = message.message + (message.hint ? ` — ${message.hint}` : "");
      return { ...state, entries: [...state.entries, { kind: "notice", level: "error", text }] };
    }
  }
}

/** "in 1,200 · out 80 · cache 75% hit · $0.0031": the numbers come from the provider. */
export function usageText(u: UsageLine): string {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  const hit = prompt ? Math.round((100 * u.cacheReadTokens) / prompt) : 0;
  const fmt = (n: number) => n.toLocaleString("en-US");
  return `in ${fmt(prompt)} · out ${fmt(u.outputTokens)} · cache ${hit}% hit · $${u.costUsd.toFixed(4)}`;
}
