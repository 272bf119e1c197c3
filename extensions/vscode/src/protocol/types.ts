/**
 * The `kiln/*` wire shapes as `kiln lsp` sends and accepts them (see lsp_server/PROTOCOL.md and
 * lsp_server/lsp/). Kept free of the `vscode` API so the same code runs in plain Node tests.
 */

export const PROTOCOL_VERSION = 1;

export const METHODS = {
  hello: "kiln/hello",
  sessionNew: "kiln/session/new",
  sessionLoad: "kiln/session/load",
  sessionList: "kiln/session/list",
  sessionPrompt: "kiln/session/prompt",
  sessionCancel: "kiln/session/cancel",
  sessionClose: "kiln/session/close",
  sessionSetMode: "kiln/session/setMode",
  sessionUpdate: "kiln/session/update",
  requestPermission: "kiln/session/requestPermission",
  editList: "kiln/edit/list",
  editResolve: "kiln/edit/resolve",
  skillsList: "kiln/skills/list",
  skillsSearch: "kiln/skills/search",
  skillsInstall: "kiln/skills/install",
  skillsRemove: "kiln/skills/remove",
  indexStatus: "kiln/index/status",
  contextShow: "kiln/context/show",
  completeMentions: "kiln/complete/mentions",
  completeCommands: "kiln/complete/commands",
  skillsUse: "kiln/skills/use",
  sessionCompact: "kiln/session/compact",
  modelsList: "kiln/models/list",
  applyEdit: "workspace/applyEdit",
} as const;

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

export type PromptBlock =
  | { type: "text"; text: string }
  | { type: "resource_link"; uri: string; name?: string; range?: Range }
  | {
      type: "resource";
      resource: { uri: string; text?: string; mimeType?: string };
      range?: Range;
    };

export interface HelloResult {
  protocolVersion: number;
  serverVersion: string;
  root: string | null;
  capabilities: {
    methods: string[];
    modes: string[];
    editModes: string[];
    positionEncoding: string;
    [key: string]: unknown;
  };
  config: Record<string, unknown>;
  /** Why the settings sent at start were not applied (the server then runs on its defaults). */
  configError?: string;
}

export interface SessionInfo {
  sessionId: string;
  cwd: string;
  title: string;
  updatedAt: string;
  mode: string;
  live: boolean;
  busy: boolean;
}

/** A `kiln/session/list` answer: 50 sessions at most, and the cursor of the next page. */
export interface SessionPage {
  sessions: SessionInfo[];
  nextCursor?: string;
}

export interface NewSessionResult {
  sessionId: string;
  cwd: string;
  mode: string;
  editMode: string;
}

export interface LoadSessionResult {
  sessionId: string;
  cwd: string;
  mode: string;
  messages: number;
  replayed: number;
}

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  costUsd?: number;
  [key: string]: unknown;
}

export interface PromptResult {
  stopReason: string;
  usage: Usage;
  filesModified: string[];
}

export interface ToolCallContent {
  type: "content" | "diff" | string;
  content?: { type: string; text?: string };
  path?: string;
  oldText?: string | null;
  newText?: string;
}

/** One `update` of a `kiln/session/update` notification (ACP `session/update` shapes). */
export interface SessionUpdate {
  sessionUpdate: string;
  [key: string]: unknown;
}

export interface UpdateNotification {
  sessionId: string;
  update: SessionUpdate;
}

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}

export interface PermissionToolCall {
  toolCallId: string;
  title: string;
  kind: string;
  status?: string;
  rawInput?: unknown;
  content?: ToolCallContent[];
  locations?: { path: string; line?: number }[];
  _meta?: { tool?: string; reason?: string; fromExternal?: boolean; proposalId?: string };
}

export interface PermissionRequest {
  sessionId: string;
  toolCall: PermissionToolCall;
  options: PermissionOption[];
}

export type PermissionResponse =
  | { outcome: { outcome: "selected"; optionId: string }; _meta?: { newText?: string } }
  | { outcome: { outcome: "cancelled" } };

export interface TextEdit {
  range: Range;
  newText: string;
  annotationId?: string;
}

export interface WorkspaceEdit {
  changes?: Record<string, TextEdit[]>;
  documentChanges?: (
    | { textDocument: { uri: string; version: number | null }; edits: TextEdit[] }
    | { kind: "create"; uri: string; options?: { overwrite?: boolean; ignoreIfExists?: boolean } }
    | { kind: "rename" | "delete"; [key: string]: unknown }
  )[];
  changeAnnotations?: Record<string, unknown>;
}

export interface ApplyWorkspaceEditParams {
  label?: string;
  edit: WorkspaceEdit;
}

export interface ApplyWorkspaceEditResult {
  applied: boolean;
  failureReason?: string;
}

export interface IndexStatus {
  state?: string;
  root?: string;
  progress?: { done: number; total: number };
  pendingFiles?: number;
  watching?: boolean;
  files?: number;
  blocks?: number;
  error?: string;
  [key: string]: unknown;
}

export interface SkillInfo {
  name: string;
  description: string;
  path: string;
  scope: string;
  thirdParty: boolean;
  allowedTools?: unknown;
}

export interface InstallResult {
  id: string;
  version: string;
  path: string;
  action: string;
}

export interface PendingEdit {
  proposalId: string;
  sessionId: string;
  toolCallId: string;
  path: string;
  oldText: string | null;
  newText: string;
}

/** One `kiln/complete/mentions` item (lines 1-based, symbols only). */
export interface MentionItem {
  kind: "file" | "folder" | "symbol";
  label: string;
  path: string;
  uri: string;
  line?: number;
  endLine?: number;
  detail?: string;
}

export interface CommandItem {
  name: string;
  kind: "builtin" | "skill";
  args: string;
  description: string;
}

/** `kiln/models/list`: what the configured provider offers (see PROTOCOL.md §6). */
export interface ModelList {
  provider: string;
  current: string | null;
  source: "server" | "known";
  models: { id: string; source: "configured" | "server" | "known" }[];
  note?: string;
}
