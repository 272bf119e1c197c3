import { expect, test } from "vitest";
import { blockStarts } from "../../src/webview/answer";

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
