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
  z.object({ type: z.literal("sessions"), sessions: z.array(sessionInfo) }),
  z.object({
    type: z.literal("server"),
    state: z.enum(["starting", "running", "stopped", "failed"]),
    message: z.string().optional(),
  }),
  z.object({ type: z.literal("error"), message: z.string(), hint: z.string().optional() }),
  /** Deferred proposals waiting for the user (editMode "deferred"). */
  z.object({
    type: z.literal("pendingEdits"),
    edits: z.array(z.object({ proposalId: z.string(), toolCallId: z.string(), path: z.string() })),
  }),
]);

export const webviewToHost = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready") }),
  z.object({ type: z.literal("prompt"), text: z.string().min(1) }),
  z.object({ type: z.literal("cancel") }),
  z.object({ type: z.literal("permission"), requestId: z.string(), optionId: z.string() }),
  z.object({ type: z.literal("newSession") }),
  z.object({ type: z.literal("listSessions") }),
  z.object({ type: z.literal("loadSession"), sessionId: z.string() }),
  z.object({ type: z.literal("openDiff"), toolCallId: z.string() }),
  z.object({
    type: z.literal("resolveEdit"),
    proposalId: z.string(),
    decision: z.enum(["accept", "reject"]),
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
