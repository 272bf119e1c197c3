import { expect, test } from "vitest";
import { hunks, keepHunks } from "../../src/protocol/hunks";

const old = Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join("");
const edited = old.replace("line 1\n", "line one\n").replace("line 15\n", "").replace("line 18\n", "line 18\nadded\n");

test("a whole-file edit splits into its hunks, with context", () => {
  const hs = hunks(old, edited);
  expect(hs.map((h) => [h.oldStart, h.oldCount, h.newCount])).toEqual([
    [1, 1, 1],
    [15, 1, 0],
    [19, 0, 1],
  ]);
  expect(hs[0].lines).toEqual([" line 0\n", "-line 1\n", "+line one\n", " line 2\n", " line 3\n", " line 4\n"]);
});

test("keeping every hunk gives the new text, none the old, some a mix", () => {
  expect(keepHunks(old, edited, [true, true, true])).toBe(edited);
  expect(keepHunks(old, edited, [false, false, false])).toBe(old);
  const mixed = keepHunks(old, edited, [true, false, false]);
  expect(mixed).toBe(old.replace("line 1\n", "line one\n"));
});

test("a new file and a file without a final newline", () => {
  expect(keepHunks("", "a\nb\n", [true])).toBe("a\nb\n");
  expect(keepHunks("a\nb", "a\nc", [true])).toBe("a\nc");
  expect(hunks("same\n", "same\n")).toEqual([]);
});
