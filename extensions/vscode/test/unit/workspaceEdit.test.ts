import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, test } from "vitest";
import { applyTextEdits, applyWorkspaceEdit, offsetAt } from "../../src/protocol/workspaceEdit";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "kiln-edit-"));
  dirs.push(d);
  return d;
};
const range = (l1: number, c1: number, l2: number, c2: number) => ({
  start: { line: l1, character: c1 },
  end: { line: l2, character: c2 },
});

describe("applying edits", () => {
  test("columns count UTF-16 code units (an emoji is two)", () => {
    const text = "a😀b = 1\nnext\n";
    expect(offsetAt(text, { line: 0, character: 3 })).toBe(3);
    expect(applyTextEdits(text, [{ range: range(0, 3, 0, 4), newText: "B" }])).toBe("a😀B = 1\nnext\n");
  });

  test("CRLF and CR line ends; positions past the end clamp", () => {
    expect(applyTextEdits("one\r\ntwo\rthree", [{ range: range(2, 0, 2, 5), newText: "3" }])).toBe("one\r\ntwo\r3");
    expect(offsetAt("ab\ncd", { line: 0, character: 99 })).toBe(2);
    expect(offsetAt("ab\ncd", { line: 9, character: 0 })).toBe(5);
  });

  test("several edits all refer to the original text", () => {
    const out = applyTextEdits("0123456789", [
      { range: range(0, 1, 0, 2), newText: "one" },
      { range: range(0, 8, 0, 9), newText: "eight" },
    ]);
    expect(out).toBe("0one234567eight9");
  });

  test("a workspace edit creates a file and fills it; a missing file is refused without writing", async () => {
    const d = tmp();
    const created = pathToFileURL(join(d, "new.py")).href;
    const existing = pathToFileURL(join(d, "old.py")).href;
    writeFileSync(join(d, "old.py"), "x = 1\n");
    const ok = await applyWorkspaceEdit({
      documentChanges: [
        { kind: "create", uri: created, options: { ignoreIfExists: true } },
        { textDocument: { uri: created, version: null }, edits: [{ range: range(0, 0, 0, 0), newText: "print('hi')\n" }] },
        { textDocument: { uri: existing, version: null }, edits: [{ range: range(0, 4, 0, 5), newText: "2" }] },
      ],
    });
    expect(ok).toEqual({ applied: true });
    expect(readFileSync(join(d, "new.py"), "utf8")).toBe("print('hi')\n");
    expect(readFileSync(join(d, "old.py"), "utf8")).toBe("x = 2\n");
    const missing = pathToFileURL(join(d, "missing.py")).href;
    const refused = await applyWorkspaceEdit({
      changes: {
        [existing]: [{ range: range(0, 0, 0, 1), newText: "y" }],
        [missing]: [{ range: range(0, 0, 0, 0), newText: "z" }],
      },
    });
    expect(refused.applied).toBe(false);
    expect(refused.failureReason).toContain("missing.py");
    expect(readFileSync(join(d, "old.py"), "utf8")).toBe("x = 2\n");
  });
});
