import { expect, test } from "vitest";
import { applyThenSave, type EditableDocument } from "../../src/host/saveEdited";

/** Open documents as VS Code keeps them: applying an edit makes a document dirty. */
function editor(initial: Record<string, boolean>) {
  const saved: string[] = [];
  const docs: (EditableDocument & { name: string })[] = Object.entries(initial).map(([name, dirty]) => ({
    name,
    uri: { toString: () => `file:///ws/${name}` },
    isDirty: dirty,
    async save() {
      saved.push(name);
      this.isDirty = false;
      return true;
    },
  }));
  return { docs, saved };
}

const edit = (names: string[]) => ({
  edit: {
    documentChanges: names.map((n) => ({
      textDocument: { uri: `file:///ws/${n}`, version: 1 },
      edits: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "x" }],
    })),
  },
});

test("an accepted edit is saved; a document with the user's own unsaved changes is not", async () => {
  const { docs, saved } = editor({ "calc.py": false, "notes.py": true, "other.py": true });
  const warnings: string[] = [];
  const result = await applyThenSave(
    edit(["calc.py", "notes.py"]),
    async () => {
      for (const d of docs) if (d.name !== "other.py") d.isDirty = true; // the edit lands in both
      return { applied: true };
    },
    () => docs,
    (u) => u,
    (m) => warnings.push(m),
  );
  expect(result).toEqual({ applied: true });
  expect(saved).toEqual(["calc.py"]); // not notes.py (dirty before), not other.py (not edited)
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("notes.py");
});

test("a refused edit saves nothing", async () => {
  const { docs, saved } = editor({ "calc.py": false });
  const result = await applyThenSave(edit(["calc.py"]), async () => ({ applied: false }), () => docs, (u) => u, () => {});
  expect(result).toEqual({ applied: false });
  expect(saved).toEqual([]);
});
