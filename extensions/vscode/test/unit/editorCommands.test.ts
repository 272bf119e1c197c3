import { beforeEach, describe, expect, test } from "vitest";
import * as vscode from "vscode";
import { type Ask, askAboutSelection, explainFile, inlineEdit, selectionContext, selectionReference } from "../../src/host/editorCommands";
import { indexStatusReport } from "../../src/host/statusBar";
import { reset, setActiveEditor, settings, shown, user } from "../stubs/vscode";

const TEXT = "import os\n\ndef main():\n    print(os.getcwd())\n";

function editor(sel: [number, number, number, number]) {
  const uri = vscode.Uri.file("/w/src/app.py");
  return {
    document: { uri, getText: () => TEXT },
    selection: new vscode.Selection(new vscode.Position(sel[0], sel[1]), new vscode.Position(sel[2], sel[3])),
  };
}

let sent: Ask[];
const send = async (a: Ask) => void sent.push(a);

beforeEach(() => {
  reset();
  sent = [];
  settings["__root"] = "/w";
});

describe("editor commands", () => {
  test("ask about selection sends the question plus the buffer as a resource with the range", async () => {
    setActiveEditor(editor([2, 0, 4, 0])); // a whole-line selection ends at column 0 of the next line
    user.inputs.push("what does main do?");
    await askAboutSelection(send);
    expect(sent).toHaveLength(1);
    expect(sent[0].blocks).toEqual([
      { type: "text", text: "what does main do?" },
      {
        type: "resource",
        resource: { uri: "file:///w/src/app.py", text: TEXT, mimeType: "text/plain" },
        range: { start: { line: 2, character: 0 }, end: { line: 3, character: 0 } },
      },
    ]);
    expect(sent[0].references).toEqual([{ uri: "file:///w/src/app.py", label: "src/app.py:3-4" }]);
  });

  test("no selection, no editor, or a dismissed question send nothing", async () => {
    setActiveEditor(editor([1, 0, 1, 0]));
    await askAboutSelection(send);
    expect(shown.at(-1)?.message).toMatch(/Select some code first/);
    setActiveEditor(undefined);
    await askAboutSelection(send);
    expect(shown.at(-1)?.message).toMatch(/Open a file/);
    setActiveEditor(editor([0, 0, 0, 9]));
    user.inputs.push(undefined);
    await askAboutSelection(send);
    expect(sent).toEqual([]);
    expect(typeof selectionReference(editor([0, 0, 0, 0]) as never)).toBe("string");
  });

  test("explain this file sends the whole buffer as a reference", async () => {
    setActiveEditor(editor([0, 0, 0, 0]));
    await explainFile(send);
    expect(sent[0].blocks[0]).toMatchObject({ type: "text" });
    expect(sent[0].blocks[1]).toEqual({
      type: "resource",
      resource: { uri: "file:///w/src/app.py", text: TEXT, mimeType: "text/plain" },
    });
    expect(sent[0].references[0].label).toBe("src/app.py");
  });

  test("inline edit (Ctrl+I) sends the instruction with the selected lines only", async () => {
    setActiveEditor(editor([2, 0, 4, 0]));
    user.inputs.push("print the home folder instead");
    await inlineEdit(send);
    expect(sent).toHaveLength(1);
    expect(sent[0].text).toMatch(/^Edit src\/app\.py:3-4: print the home folder instead\nChange only those lines/);
    expect(sent[0].blocks[1]).toMatchObject({ type: "resource", range: { start: { line: 2 }, end: { line: 3 } } });
    setActiveEditor(editor([1, 0, 1, 0]));
    await inlineEdit(send);
    expect(sent).toHaveLength(1);
    expect(shown.at(-1)?.message).toMatch(/Select the code to edit/);
  });

  test("inline edit of an untitled buffer or a file outside the workspace sends nothing", async () => {
    for (const uri of [vscode.Uri.from({ scheme: "untitled", path: "Untitled-1" }), vscode.Uri.file("/elsewhere/app.py")]) {
      setActiveEditor({ ...editor([2, 0, 4, 0]), document: { uri, getText: () => TEXT } });
      user.inputs.push("rename main");
      await inlineEdit(send);
      expect(sent).toHaveLength(0);
      expect(shown.at(-1)?.message).toMatch(/save this one inside the workspace folder/);
    }
  });

  test("add selection to chat gives a pill with the selected lines", () => {
    setActiveEditor(editor([2, 0, 4, 0]));
    expect(selectionContext()).toEqual({
      label: "@src/app.py:3-4",
      uri: "file:///w/src/app.py",
      range: { startLine: 3, endLine: 4 },
    });
  });

  test("Show Index Status is readable text, not JSON", () => {
    const lines = indexStatusReport({
      state: "ready",
      root: "/w",
      files: 12,
      blocks: 80,
      watching: true,
      db_bytes: 2 * 1048576,
      commits: 0,
    });
    expect(lines).toEqual(["Kiln index: ready — /w", "12 files, 80 blocks", "Database: 2.0 MB", "Watching for changes"]);
    expect(lines.join(" ")).not.toMatch(/[{}"]/);
  });
});
