/**
 * A `vscode` module for running the built extension (dist/extension.js) in plain Node with the
 * real `vscode-languageclient` and a real `kiln lsp`.
 *
 * It implements what the extension and the language client use on the paths under test —
 * configuration, output channels, commands, the webview view, `workspace.applyEdit` (to disk,
 * like VS Code does for files that are not open) — and answers anything else with inert
 * classes and functions that return disposables, so unused features register into nothing.
 * Unknown names touched are recorded, which keeps the stand-in honest about its gaps.
 */

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { URI, Utils } from "vscode-uri";

const noop = () => ({ dispose() {} });
export const touched = new Set<string>();

class Disposable {
  constructor(private readonly fn: () => void = () => {}) {}
  dispose() {
    this.fn();
  }
  static from(...items: { dispose(): unknown }[]) {
    return new Disposable(() => items.forEach((i) => i?.dispose?.()));
  }
}

class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  event = (l: (e: T) => void) => {
    this.listeners.push(l);
    return new Disposable(() => (this.listeners = this.listeners.filter((x) => x !== l)));
  };
  fire(e: T) {
    this.listeners.slice().forEach((l) => l(e));
  }
  dispose() {
    this.listeners = [];
  }
}

class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: Position | number, b: Position | number, c?: number, d?: number) {
    this.start = typeof a === "number" ? new Position(a, b as number) : a;
    this.end = typeof a === "number" ? new Position(c!, d!) : (b as Position);
  }
  get isEmpty() {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

class CancellationTokenSource {
  private emitter = new EventEmitter<void>();
  token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel() {
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose() {}
}

type Op =
  | { kind: "create"; uri: URI }
  | { kind: "replace"; uri: URI; range: Range; newText: string };

class WorkspaceEdit {
  readonly ops: Op[] = [];
  createFile(uri: URI) {
    this.ops.push({ kind: "create", uri });
  }
  replace(uri: URI, range: Range, newText: string) {
    this.ops.push({ kind: "replace", uri, range, newText });
  }
  insert(uri: URI, position: Position, newText: string) {
    this.replace(uri, new Range(position, position), newText);
  }
  set(uri: URI, edits: { range: Range; newText: string }[]) {
    edits.forEach((e) => this.replace(uri, e.range, e.newText));
  }
  get size() {
    return this.ops.length;
  }
}

function offset(text: string, p: Position): number {
  const lines = text.split("\n");
  let at = 0;
  for (let i = 0; i < p.line && i < lines.length; i++) at += lines[i].length + 1;
  return Math.min(at + p.character, text.length);
}

/** What the test controls and observes. */
export const host = {
  settings: {} as Record<string, unknown>,
  workspaceFolders: [] as { uri: URI; name: string; index: number }[],
  output: [] as string[],
  shown: [] as string[],
  applied: [] as WorkspaceEdit[],
  providers: new Map<string, unknown>(),
  /** Text document content providers, by scheme. */
  contentProviders: new Map<string, { provideTextDocumentContent(uri: URI): string }>(),
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  statusTexts: [] as string[],
  inputs: [] as (string | undefined)[],
  /** Labels the user picks in quick picks, in order (undefined: dismissed). */
  picks: [] as (string | undefined)[],
  activeTextEditor: undefined as unknown,
  /** Documents open in the stand-in editor, by path: edits to them stay in memory until saved. */
  openDocs: new Map<string, { text: string; dirty: boolean; version: number }>(),
  warnings: [] as string[],
  /** Open documents without a file (`untitled:`…), by URI: their text. */
  untitled: new Map<string, string>(),
  /** Settings were edited: tell whoever listens (`affects` compares by prefix, like VS Code). */
  fireConfigurationChange(section: string) {
    configurationChanged.fire({ affectsConfiguration: (s: string) => section === s || section.startsWith(`${s}.`) });
  },
};

const configurationChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();

function openDocument(path: string) {
  const doc = host.openDocs.get(path)!;
  return {
    uri: URI.file(path),
    get version() {
      return doc.version;
    },
    get isDirty() {
      return doc.dirty;
    },
    getText: () => doc.text,
    async save() {
      writeFileSync(path, doc.text);
      doc.dirty = false;
      return true;
    },
  };
}

function lookup(path: string): unknown {
  let cur: unknown = host.settings;
  for (const part of path.split(".")) {
    if (cur && typeof cur === "object" && part in (cur as object)) cur = (cur as Record<string, unknown>)[part];
    else return undefined;
  }
  return cur;
}

function outputChannel(name: string) {
  const line = (l: string) => host.output.push(`[${name}] ${l}`);
  return { name, append: line, appendLine: line, replace: line, clear() {}, show() {}, hide() {}, dispose() {} };
}

/** Inert stand-ins for everything not implemented above. */
function inert(path: string): unknown {
  const fn = function () {
    return noop();
  };
  return new Proxy(fn, {
    get(_t, prop) {
      if (prop === "prototype") return {};
      if (typeof prop === "symbol") return undefined;
      touched.add(`${path}.${prop}`);
      return inert(`${path}.${String(prop)}`);
    },
    construct() {
      return {};
    },
  });
}

function namespace<T extends object>(name: string, impl: T): T {
  return new Proxy(impl, {
    get(target, prop) {
      if (prop in target) return (target as Record<string | symbol, unknown>)[prop];
      if (typeof prop === "symbol") return undefined;
      touched.add(`${name}.${prop}`);
      return typeof prop === "string" && /^on[A-Z]/.test(prop) ? () => noop() : inert(`${name}.${prop}`);
    },
  });
}

const api = {
  version: "1.82.0",
  Disposable,
  EventEmitter,
  Position,
  Range,
  Selection: Range,
  Uri: Object.assign(URI, { joinPath: Utils.joinPath }),
  WorkspaceEdit,
  CancellationTokenSource,
  StatusBarAlignment: { Left: 1, Right: 2 },
  ViewColumn: { Active: -1, One: 1 },
  env: { appName: "Stand-in", language: "en", machineId: "test", sessionId: "test", uiKind: 1 },
  window: namespace("window", {
    get activeTextEditor() {
      return host.activeTextEditor;
    },
    showInputBox: async () => host.inputs.shift(),
    showQuickPick: async (items: { label: string }[]) => {
      const label = host.picks.shift();
      return items.find((i) => i.label === label);
    },
    visibleTextEditors: [],
    createOutputChannel: outputChannel,
    showErrorMessage: async (m: string) => void host.shown.push(`error: ${m}`),
    showWarningMessage: async (m: string) => {
      host.shown.push(`warning: ${m}`);
      host.warnings.push(m);
    },
    showInformationMessage: async (m: string) => void host.shown.push(`info: ${m}`),
    registerWebviewViewProvider: (id: string, provider: unknown) => {
      host.providers.set(id, provider);
      return noop();
    },
    createStatusBarItem: () => {
      const item = {
        command: "",
        tooltip: "",
        show() {},
        hide() {},
        dispose() {},
        set text(t: string) {
          host.statusTexts.push(t);
        },
        get text() {
          return host.statusTexts.at(-1) ?? "";
        },
      };
      return item;
    },
  }),
  workspace: namespace("workspace", {
    get workspaceFolders() {
      return host.workspaceFolders;
    },
    get textDocuments() {
      const untitled = [...host.untitled].map(([uri, text]) => ({ uri: URI.parse(uri), isUntitled: true, isDirty: true, version: 1, getText: () => text }));
      return [...[...host.openDocs.keys()].map(openDocument), ...untitled];
    },
    onDidChangeConfiguration: configurationChanged.event,
    getConfiguration: (section?: string) => ({
      get: (key: string, fallback?: unknown) => lookup(section ? `${section}.${key}` : key) ?? fallback,
      has: (key: string) => lookup(section ? `${section}.${key}` : key) !== undefined,
      inspect: () => undefined,
      update: async () => {},
    }),
    getWorkspaceFolder: () => host.workspaceFolders[0],
    asRelativePath: (p: URI | string) => (typeof p === "string" ? p : p.fsPath),
    registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: URI): string }) => {
      host.contentProviders.set(scheme, provider);
      return noop();
    },
    createFileSystemWatcher: () => ({
      onDidCreate: noop,
      onDidChange: noop,
      onDidDelete: noop,
      dispose() {},
    }),
    applyEdit: async (edit: WorkspaceEdit) => {
      for (const op of edit.ops) {
        const path = op.uri.fsPath;
        if (op.kind === "create") {
          mkdirSync(dirname(path), { recursive: true });
          try {
            readFileSync(path);
          } catch {
            writeFileSync(path, "");
          }
          continue;
        }
        const open = host.openDocs.get(path);
        const text = open ? open.text : readFileSync(path, "utf8");
        const next = text.slice(0, offset(text, op.range.start)) + op.newText + text.slice(offset(text, op.range.end));
        if (open) {
          open.text = next; // like VS Code: an open document is edited, not the file
          open.dirty = true;
          open.version += 1;
        } else {
          writeFileSync(path, next);
        }
      }
      host.applied.push(edit);
      return true;
    },
  }),
  commands: namespace("commands", {
    registerCommand: (id: string, fn: (...args: unknown[]) => unknown) => {
      host.commands.set(id, fn);
      return noop();
    },
    executeCommand: async (id: string, ...args: unknown[]) => host.commands.get(id)?.(...args),
    getCommands: async () => [...host.commands.keys()],
  }),
  languages: namespace("languages", { match: () => 10 }),
  extensions: namespace("extensions", { all: [], getExtension: () => undefined }),
};

export const vscodeStandIn = new Proxy(api, {
  get(target, prop) {
    if (prop in target) return (target as Record<string | symbol, unknown>)[prop];
    if (typeof prop === "symbol" || prop === "then" || prop === "__esModule") return undefined;
    touched.add(String(prop));
    return inert(String(prop));
  },
});

/** Make `require("vscode")` return the stand-in (CommonJS loader hook). */
export function installVscodeModule(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Module = require("node:module") as { _load: (request: string, ...rest: unknown[]) => unknown };
  const original = Module._load;
  Module._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") return vscodeStandIn;
    return original.call(this, request, ...rest);
  };
}
