import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, expect, test } from "vitest";
import * as vscode from "vscode";
import { codeAction, contextBlocks, openWorkspaceFile } from "../../src/host/composerHost";
import { appliedEdits, clipboard, documents, opened, reset, setActiveEditor, settings, shown, user } from "../stubs/vscode";

beforeEach(() => {
  reset();
  settings["__folders"] = ["/w"];
});

test("Copy puts the code block on the clipboard", async () => {
  expect(await codeAction("copy", "x = 1\n", "")).toBe("Copied to the clipboard.");
  expect(clipboard).toEqual(["x = 1\n"]);
});

test("Insert replaces the active editor's selection", async () => {
  const edits: [unknown, string][] = [];
  const selection = new vscode.Selection(new vscode.Position(1, 0), new vscode.Position(1, 0));
  setActiveEditor({
    selection,
    document: { uri: vscode.Uri.file("/w/app.py") },
    edit: async (fn: (b: { replace(r: unknown, t: string): void }) => void) => {
      fn({ replace: (r, t) => edits.push([r, t]) });
      return true;
    },
  });
  expect(await codeAction("insert", "y = 2\n", "")).toBeUndefined();
  expect(edits).toEqual([[selection, "y = 2\n"]]);
  // The proposal's diff (a virtual document) or an editor that refuses the edit: said so.
  setActiveEditor({ selection, document: { uri: vscode.Uri.from({ scheme: "kiln-proposal", path: "/app.py" }) }, edit: async () => true });
  expect(await codeAction("insert", "y = 2\n", "")).toMatch(/not a file/);
  setActiveEditor({ selection, document: { uri: vscode.Uri.file("/w/app.py") }, edit: async () => false });
  expect(await codeAction("insert", "y = 2\n", "")).toMatch(/Could not insert into .*app\.py/);
  expect(edits).toHaveLength(1);
  setActiveEditor(undefined);
  expect(await codeAction("insert", "y = 2\n", "")).toMatch(/Open a file/);
});

test("Apply replaces the named workspace file after a confirmation; never a file outside", async () => {
  documents.set("/w/calc.py", "def add(a, b):\n    return a - b\n");
  user.buttons.push("Apply");
  expect(await codeAction("apply", "def add(a, b):\n    return a + b\n", "calc.py")).toBe("Applied to /w/calc.py.");
  expect(shown.at(-1)?.message).toMatch(/Replace the whole of .*calc\.py/);
  expect(appliedEdits[0][0]).toMatchObject({ text: "def add(a, b):\n    return a + b\n", range: { end: new vscode.Position(2, 0) } });
  // Declined: nothing applied.
  user.buttons.push(undefined);
  expect(await codeAction("apply", "z", "calc.py")).toBeUndefined();
  expect(appliedEdits).toHaveLength(1);
  // Outside the workspace: refused without asking.
  expect(await codeAction("apply", "z", "../etc/passwd")).toMatch(/not a file in this workspace/);
  expect(appliedEdits).toHaveLength(1);
});

test("Apply without a named file takes the active editor only when it is a workspace file", async () => {
  const selection = new vscode.Selection(new vscode.Position(0, 0), new vscode.Position(0, 0));
  // A file opened from outside the workspace: refused without asking, nothing applied.
  documents.set("/etc/hosts", "127.0.0.1 localhost\n");
  setActiveEditor({ selection, document: { uri: vscode.Uri.file("/etc/hosts") } });
  user.buttons.push("Apply");
  expect(await codeAction("apply", "10.0.0.1 bank.example\n", "")).toMatch(/\/etc\/hosts is not a file in this workspace/);
  expect(appliedEdits).toHaveLength(0);
  expect(shown).toHaveLength(0);
  // A proposal's diff (a virtual document): refused as well.
  setActiveEditor({ selection, document: { uri: vscode.Uri.from({ scheme: "kiln-proposal", path: "/app.py" }) } });
  expect(await codeAction("apply", "x = 2\n", "")).toMatch(/active editor is not a file in this workspace/);
  expect(appliedEdits).toHaveLength(0);
  // A file of the workspace: asked, then applied.
  documents.set("/w/app.py", "x = 1\n");
  setActiveEditor({ selection, document: { uri: vscode.Uri.file("/w/app.py") } });
  expect(await codeAction("apply", "x = 2\n", "")).toBe("Applied to /w/app.py.");
  expect(appliedEdits).toHaveLength(1);
});

test("Apply to a file the answer names that does not exist yet creates it, after a confirmation", async () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "kiln-new-file-")));
  settings["__folders"] = [root];
  user.buttons.push("Create");
  expect(await codeAction("apply", "def util():\n    pass\n", "pkg/util.py")).toBe(`Created ${root}/pkg/util.py.`);
  expect(shown.at(-1)?.message).toMatch(/Create .*pkg\/util\.py with this code block\?/);
  expect(appliedEdits[0]).toEqual([{ create: vscode.Uri.file(join(root, "pkg/util.py")) }, { uri: vscode.Uri.file(join(root, "pkg/util.py")), range: new vscode.Range(new vscode.Position(0, 0), new vscode.Position(0, 0)), text: "def util():\n    pass\n" }]);
  // Declined: nothing created.
  user.buttons.push(undefined);
  expect(await codeAction("apply", "x", "other.py")).toBeUndefined();
  expect(appliedEdits).toHaveLength(1);
});

test("a path through a link to outside the workspace is outside: not opened, not applied", async () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "kiln-links-")));
  const root = join(base, "ws");
  mkdirSync(join(base, "outside"), { recursive: true });
  mkdirSync(root);
  writeFileSync(join(base, "outside", "secret.txt"), "keep me\n");
  writeFileSync(join(root, "..notes.md"), "a file whose name starts with two dots\n");
  symlinkSync(join(base, "outside"), join(root, "docs"));
  settings["__folders"] = [root];
  expect(await codeAction("apply", "overwritten\n", "docs/secret.txt")).toMatch(/not a file in this workspace/);
  expect(appliedEdits).toHaveLength(0);
  expect(await openWorkspaceFile("docs/secret.txt")).toMatch(/not a file in this workspace/);
  expect(opened).toHaveLength(0);
  expect(await openWorkspaceFile("..notes.md")).toBeUndefined();
  expect(opened).toHaveLength(1);
});

test("pills become resource links, a symbol with its lines", () => {
  expect(
    contextBlocks([
      { label: "@calc.py", uri: "file:///w/calc.py" },
      { label: "@add", uri: "file:///w/calc.py", range: { startLine: 1, endLine: 2 } },
    ]),
  ).toEqual([
    { type: "resource_link", uri: "file:///w/calc.py", name: "calc.py" },
    {
      type: "resource_link",
      uri: "file:///w/calc.py",
      name: "add",
      range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } },
    },
  ]);
});
