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

test("a big file with two changes is two hunks; a rewritten one is one, not a frozen panel", () => {
  const big = Array.from({ length: 20000 }, (_, i) => `line ${i}\n`).join("");
  const two = big.replace("line 0\n", "line zero\n").replace("line 19999\n", "line last\n");
  expect(hunks(big, two).map((h) => [h.oldStart, h.oldCount, h.newCount])).toEqual([
    [0, 1, 1],
    [19999, 1, 1],
  ]);
  expect(keepHunks(big, two, [false, true])).toBe(big.replace("line 19999\n", "line last\n"));
  const rewritten = Array.from({ length: 20000 }, (_, i) => `other ${i}\n`).join("");
  expect(hunks(big, rewritten).map((h) => [h.oldStart, h.oldCount, h.newCount])).toEqual([[0, 20000, 20000]]);
});

test("every hunk kept gives the new text, none the old, and the diff is a shortest one", () => {
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
  for (let t = 0; t < 500; t++) {
    const a = Array.from({ length: rnd(10) }, () => `l${rnd(4)}\n`);
    const b = Array.from({ length: rnd(10) }, () => `l${rnd(4)}\n`);
    const [oldText, newText] = [a.join(""), b.join("")];
    const hs = hunks(oldText, newText);
    expect(keepHunks(oldText, newText, hs.map(() => true))).toBe(newText);
    expect(keepHunks(oldText, newText, hs.map(() => false))).toBe(oldText);
    const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
    for (let i = a.length - 1; i >= 0; i--)
      for (let j = b.length - 1; j >= 0; j--)
        lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    const changed = hs.reduce((n, h) => n + h.oldCount + h.newCount, 0);
    expect(changed).toBe(a.length + b.length - 2 * lcs[0][0]);
  }
});
