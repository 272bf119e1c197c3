/**
 * A small stand-in for the `vscode` API: just the surface the extension touches, with the
 * user's answers scripted and every call the extension makes recorded for the test to check.
 */

type Listener<T> = (e: T) => unknown;

export class Disposable {
  constructor(private readonly fn: () => void = () => {}) {}
  dispose(): void {
    this.fn();
  }
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
  };
  fire(e: T): void {
    for (const l of this.listeners.slice()) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query = "",
  ) {}
  get fsPath(): string {
    return this.path;
  }
  static file(path: string): Uri {
    return new Uri("file", path);
  }
  static from(parts: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(parts.scheme, parts.path ?? "", parts.query ?? "");
  }
  static parse(value: string): Uri {
    const m = /^([a-z-]+):(?:\/\/)?([^?]*)(?:\?(.*))?$/.exec(value);
    return m ? new Uri(m[1], m[2], m[3] ?? "") : new Uri("file", value);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...parts].join("/"), base.query);
  }
  toString(): string {
    return `${this.scheme}://${this.path}${this.query ? `?${this.query}` : ""}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class Selection extends Range {}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ViewColumn {
  Active = -1,
  One = 1,
}

/** What the fake user answers, in order, per kind of prompt; and everything shown. */
export const user = {
  inputs: [] as (string | undefined)[],
  picks: [] as ((items: { label: string }[]) => unknown)[],
  buttons: [] as (string | undefined)[],
};

export interface Shown {
  kind: "info" | "warning" | "error";
  message: string;
  options: unknown[];
}
export const shown: Shown[] = [];
export const executed: { command: string; args: unknown[] }[] = [];
export const opened: { uri: Uri; options: unknown }[] = [];
export const statusItems: { text: string; tooltip: string; command: string; visible: boolean; disposed: boolean }[] = [];
export const settings: Record<string, unknown> = {};
/** What the folder's `.vscode/settings.json` sets (a repository's file): `get` returns it over the
 * user's, as an editor that ignores a setting's `scope` would. */
export const workspaceSettings: Record<string, unknown> = {};
export const clipboard: string[] = [];
export const appliedEdits: WorkspaceEdit["ops"][] = [];
/** Documents `workspace.openTextDocument` returns, by path. */
export const documents = new Map<string, string>();

export class WorkspaceEdit {
  readonly ops: ({ uri: Uri; range: Range; text: string } | { create: Uri })[] = [];
  replace(uri: Uri, range: Range, text: string) {
    this.ops.push({ uri, range, text });
  }
  insert(uri: Uri, position: Position, text: string) {
    this.replace(uri, new Range(position, position), text);
  }
  createFile(uri: Uri) {
    this.ops.push({ create: uri });
  }
}

export const env = {
  clipboard: {
    async writeText(text: string) {
      clipboard.push(text);
    },
  },
};

export function setActiveEditor(editor: unknown): void {

  window.activeTextEditor = editor;
}

export function reset(): void {
  user.inputs = [];
  user.picks = [];
  user.buttons = [];
  shown.length = 0;
  executed.length = 0;
  opened.length = 0;
  statusItems.length = 0;
  clipboard.length = 0;
  appliedEdits.length = 0;
  documents.clear();
  for (const k of Object.keys(settings)) delete settings[k];
  for (const k of Object.keys(workspaceSettings)) delete workspaceSettings[k];
  setActiveEditor(undefined);
}

function message(kind: Shown["kind"]) {
  return async (text: string, ...options: unknown[]) => {
    shown.push({ kind, message: text, options });
    return user.buttons.shift();
  };
}

export const window = {
  activeTextEditor: undefined as unknown,
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  async showInputBox(_options?: unknown): Promise<string | undefined> {
    return user.inputs.shift();
  },
  async showQuickPick<T extends { label: string }>(items: T[] | Promise<T[]>, _options?: unknown) {
    const pick = user.picks.shift();
    return pick ? (pick(await items) as T | undefined) : undefined;
  },
  async showTextDocument(uri: Uri, options?: unknown) {
    opened.push({ uri, options });
    return {};
  },
  createStatusBarItem(_alignment?: StatusBarAlignment, _priority?: number) {
    const item = {
      text: "",
      tooltip: "",
      command: "",
      visible: false,
      disposed: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.disposed = true;
      },
    };
    statusItems.push(item);
    return item;
  },
  createOutputChannel(_name: string) {
    const lines: string[] = [];
    return { lines, appendLine: (l: string) => lines.push(l), dispose() {} };
  },
  registerWebviewViewProvider() {
    return new Disposable();
  },
};

export const commands = {
  async executeCommand(command: string, ...args: unknown[]) {
    executed.push({ command, args });
    return undefined;
  },
  registerCommand(_command: string, _fn: (...args: unknown[]) => unknown) {
    return new Disposable();
  },
};

export const workspace = {
  async openTextDocument(uri: Uri) {
    const text = documents.get(uri.fsPath);
    if (text === undefined) throw new Error(`cannot open ${uri.fsPath}`);
    return {
      uri,
      getText: () => text,
      positionAt: (offset: number) => {
        const before = text.slice(0, offset).split("\n");
        return new Position(before.length - 1, before[before.length - 1].length);
      },
    };
  },
  async applyEdit(edit: WorkspaceEdit) {
    appliedEdits.push(edit.ops);
    return true;
  },
  /** Open documents (the stand-in has none unless a test opens them). */
  textDocuments: [] as { uri: Uri; getText(): string }[],
  get workspaceFolders() {
    const folders = settings["__folders"] as string[] | undefined;
    return folders?.map((f, index) => ({ uri: Uri.file(f), name: f, index }));
  },
  fs: {
    async stat(uri: Uri) {
      const { statSync } = await import("node:fs");
      return statSync(uri.fsPath);
    },
  },
  asRelativePath(uri: Uri | string, _includeFolder?: boolean): string {
    const path = typeof uri === "string" ? uri : uri.path;
    const root = (settings["__root"] as string | undefined) ?? "";
    return root && path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
  },
  getConfiguration(section?: string) {
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const full = section ? `${section}.${key}` : key;
        if (full in workspaceSettings) return workspaceSettings[full] as T;
        return (full in settings ? settings[full] : fallback) as T | undefined;
      },
      inspect<T>(key: string) {
        const full = section ? `${section}.${key}` : key;
        return { key: full, globalValue: settings[full] as T | undefined, workspaceValue: workspaceSettings[full] as T | undefined };
      },
    };
  },
  registerTextDocumentContentProvider() {
    return new Disposable();
  },
};
