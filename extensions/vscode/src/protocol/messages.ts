/**
 * The one schema for every message between the extension host and the chat webview.
 *
 * Both sides validate what they receive with it (and the tests validate what they send), so a
 * message the other side would not understand is caught at the boundary instead of silently
 * ignored by a `switch`.
 */

import { z } from "zod";

const update = z.object({ sessionUpdate: z.string() }).passthrough();
const option = z.object({ optionId: z.string(), name: z.string(), kind: z.string() });
const toolCall = z
  .object({ toolCallId: z.string(), title: z.string(), kind: z.string().optional() })
  .passthrough();
const reference = z.object({ uri: z.string(), label: z.string() });
/** A context pill: a file, folder, symbol or selection sent with the next question. */
const contextItem = z.object({
  label: z.string(),
  uri: z.string(),
  range: z.object({ startLine: z.number().int().nonnegative(), endLine: z.number().int().nonnegative() }).optional(),
});
const completion = z.object({
  kind: z.string(),
  label: z.string(),
  detail: z.string().optional(),
  /** Text that replaces the `@word` or `/word` being typed. */
  insert: z.string(),
  context: contextItem.optional(),
});
const sessionInfo = z
  .object({ sessionId: z.string(), title: z.string(), updatedAt: z.string().optional() })
  .passthrough();

export const hostToWebview = z.discriminatedUnion("type", [
  /** A session was created or loaded: the view starts from empty. */
  z.object({ type: z.literal("session"), sessionId: z.string().nullable(), title: z.string() }),
  z.object({ type: z.literal("update"), sessionId: z.string(), update }),
  /** What the user sent (the server does not echo live prompts). */
  z.object({ type: z.literal("userMessage"), text: z.string(), references: z.array(reference) }),
  z.object({
    type: z.literal("permission"),
    requestId: z.string(),
    sessionId: z.string(),
    toolCall,
    options: z.array(option),
  }),
  z.object({
    type: z.literal("permissionClosed"),
    requestId: z.string(),
    reason: z.enum(["answered", "cancelled"]),
  }),
  z.object({
    type: z.literal("turn"),
    state: z.enum(["running", "idle"]),
    stopReason: z.string().optional(),
  }),
  /** The history, newest first; `more`: older sessions follow (ask with `olderSessions`). */
  z.object({ type: z.literal("sessions"), sessions: z.array(sessionInfo), more: z.boolean().optional() }),
  z.object({
    type: z.literal("server"),
    state: z.enum(["starting", "running", "stopped", "failed", "no-folder"]),
    message: z.string().optional(),
  }),
  z.object({ type: z.literal("error"), message: z.string(), hint: z.string().optional() }),
  /** Answer to a `complete` request of the composer (same id). */
  z.object({ type: z.literal("completions"), id: z.number().int(), items: z.array(completion) }),
  /** The session's settings, for the pickers in the panel header. */
  z.object({
    type: z.literal("config"),
    mode: z.string(),
    editMode: z.string(),
    model: z.string(),
  }),
  /** Something the editor added to the next question (e.g. "Kiln: Add Selection to Chat"). */
  z.object({ type: z.literal("addContext"), item: contextItem }),
  /** Questions Stop kept from being asked: back into the question box, with their pills. */
  z.object({ type: z.literal("draft"), text: z.string(), context: z.array(contextItem) }),
  z.object({ type: z.literal("info"), message: z.string() }),
  /** Deferred proposals waiting for the user (editMode "deferred"). */
  z.object({
    type: z.literal("pendingEdits"),
    edits: z.array(
      z.object({
        proposalId: z.string(),
        toolCallId: z.string(),
        path: z.string(),
        /** Whole-file texts, for per-hunk review in the panel (null oldText: a new file). */
        oldText: z.string().nullable().optional(),
        newText: z.string().optional(),
      }),
    ),
  }),
  /** What `kiln/models/list` offers, for the model picker (`note`: why the list is partial). */
  z.object({ type: z.literal("models"), ids: z.array(z.string()), note: z.string().optional() }),
]);

export const webviewToHost = z.discriminatedUnion("type", [
  /** The page is up; `sessionId`: the session its restored transcript shows, if any. */
  z.object({ type: z.literal("ready"), sessionId: z.string().nullable().optional() }),
  z.object({ type: z.literal("prompt"), text: z.string().min(1), context: z.array(contextItem).optional() }),
  /** A slash command typed in the composer: `/name args`. */
  z.object({
    type: z.literal("command"),
    name: z.string().min(1),
    args: z.string(),
    context: z.array(contextItem).optional(),
  }),
  z.object({
    type: z.literal("complete"),
    id: z.number().int(),
    trigger: z.enum(["@", "/"]),
    query: z.string(),
  }),
  /** A workspace-relative path the answer mentioned; the host opens it only inside the workspace. */
  z.object({ type: z.literal("openFile"), path: z.string(), line: z.number().int().positive().optional() }),
  z.object({
    type: z.literal("codeAction"),
    action: z.enum(["copy", "insert", "apply"]),
    code: z.string(),
    lang: z.string(),
    target: z.string(),
  }),
  z.object({ type: z.literal("setMode"), mode: z.string().optional(), editMode: z.string().optional() }),
  z.object({ type: z.literal("setModel"), model: z.string() }),
  z.object({ type: z.literal("openFolder") }),
  z.object({ type: z.literal("cancel") }),
  z.object({
    type: z.literal("permission"),
    requestId: z.string(),
    optionId: z.string(),
    /** Per-hunk review: the file as the user kept it (only with an allow option). */
    newText: z.string().optional(),
  }),
  z.object({ type: z.literal("newSession") }),
  z.object({ type: z.literal("listSessions") }),
  /** The history picker's "Load older sessions…": the next page of the history. */
  z.object({ type: z.literal("olderSessions") }),
  z.object({ type: z.literal("loadSession"), sessionId: z.string() }),
  z.object({ type: z.literal("openDiff"), toolCallId: z.string() }),
  z.object({
    type: z.literal("resolveEdit"),
    proposalId: z.string(),
    decision: z.enum(["accept", "reject"]),
    /** Per-hunk review: the file as the user kept it (accept only). */
    newText: z.string().optional(),
  }),
  z.object({
    type: z.literal("openLocation"),
    path: z.string(),
    line: z.number().int().nonnegative().optional(),
  }),
]);

export type HostToWebview = z.infer<typeof hostToWebview>;
export type WebviewToHost = z.infer<typeof webviewToHost>;
export type Reference = z.infer<typeof reference>;
export type ContextItem = z.infer<typeof contextItem>;
export type Completion = z.infer<typeof completion>;

export type Parsed<T> = { ok: true; message: T } | { ok: false; error: string };

function parse<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown): Parsed<T> {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, message: result.data };
  const issue = result.error.issues[0];
  const where = issue?.path.length ? ` at ${issue.path.join(".")}` : "";
  return { ok: false, error: `${issue?.message ?? "invalid message"}${where}` };
}

export const parseHostMessage = (value: unknown) => parse(hostToWebview, value);
export const parseWebviewMessage = (value: unknown) => parse(webviewToHost, value);
