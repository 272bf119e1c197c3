import { expect, test } from "vitest";
import { blockStarts, LONG_BLOCK } from "../../src/webview/answer";

const TEXT = [
  "Intro paragraph.",
  "",
  "- one",
  "",
  "- two",
  "  continued",
  "",
  "```python calc.py",
  "def f():",
  "",
  "    return 1",
  "```",
  "",
  "12. twelve",
  "",
  "~~~",
  "",
  "not a block start inside tildes",
  "~~~",
  "",
  "Done.",
].join("\n");

test("blocks start after blank lines outside fences, never inside a list or a fence", () => {
  const starts = blockStarts(TEXT).map((at) => TEXT.slice(at).split("\n")[0]);
  expect(starts).toEqual(["Intro paragraph.", "```python calc.py", "~~~", "Done."]);
});

test("a start, once found in a prefix, stays one in every longer text", () => {
  const full = blockStarts(TEXT);
  for (let n = 0; n <= TEXT.length; n++) {
    const some = blockStarts(TEXT.slice(0, n));
    expect(full.slice(0, some.length)).toEqual(some);
    // and the search can resume from the last start found
    expect(blockStarts(TEXT, some[some.length - 1])).toEqual(full.slice(some.length - 1));
  }
});

test("a fence opening in the first column starts a block even right after a paragraph", () => {
  const text = "Here:\n```js\nlet x = 1;\n\nlet y = 2;\n```\nAfter.\n";
  expect(blockStarts(text).map((at) => text.slice(at).split("\n")[0])).toEqual(["Here:", "```js"]);
});

test("a huge paragraph or list without blank lines is cut at lines that can start a block", () => {
  const items = Array.from({ length: 3000 }, (_, i) => `${i + 1}. item number ${i + 1} of a long list`).join("\n");
  const para = Array.from({ length: 1500 }, (_, i) => `line ${i} of one long paragraph`).join("\n");
  const table = "| a | b |\n|---|---|\n" + Array.from({ length: 1500 }, (_, i) => `| ${i} | x |`).join("\n");
  for (const text of [items, para]) {
    const starts = blockStarts(text);
    expect(starts.length).toBeGreaterThan(text.length / (LONG_BLOCK + 100));
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeLessThan(LONG_BLOCK + 100);
    // and streamed in pieces it is cut at the same places
    let some = [0];
    for (let n = 4096; n < text.length + 4096; n += 4096) {
      some = [...some.slice(0, -1), ...blockStarts(text.slice(0, n), some[some.length - 1])];
    }
    expect(some).toEqual(starts);
  }
  expect(blockStarts(table)).toEqual([0]); // a table is never cut: its rows need its header
});
