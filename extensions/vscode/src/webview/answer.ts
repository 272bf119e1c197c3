/**
 * An answer that grows while it streams. Its Markdown is cut into blocks at blank lines outside
 * fenced code; a block, once the text after it has started the next one, never changes again,
 * so each update renders only the last block. The text shown before stays the
 * same DOM (a selection in it survives, and a long answer costs per update what its last block
 * costs, not what the whole answer costs).
 *
 * The cut is a function of the text alone: an answer rendered whole (a reopened panel, a
 * replayed session) is cut and drawn exactly as it was while it streamed.
 */

import { renderMarkdown } from "./markdown";

const LIST_ITEM = /^(?:[-*+]|\d{1,9}[.)])(?:\s|$)/;
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

interface Fence {
  char: string;
  length: number;
}

function opens(line: string): Fence | null {
  const m = FENCE.exec(line);
  if (!m || (m[1][0] === "`" && m[2].includes("`"))) return null;
  return { char: m[1][0], length: m[1].length };
}

function closes(line: string, fence: Fence): boolean {
  const m = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
  return m !== null && m[1][0] === fence.char && m[1].length >= fence.length;
}

/**
 * Whether a line after a blank one starts a block: it begins in the first column and is no
 * list item (the items of one list stay in one block). Undefined while the line, still growing,
 * could yet become a list item (`1`, `-`).
 */
function startsBlock(line: string, complete: boolean): boolean | undefined {
  if (line === "" || /^\s/.test(line)) return line === "" && !complete ? undefined : false;
  if (LIST_ITEM.test(line)) return false;
  if (!complete && /^(?:[-*+]|\d{1,9}[.)]?)$/.test(line)) return undefined;
  return true;
}

/**
 * A paragraph or list longer than this is cut at its next line that can start a block of its own
 * (a new paragraph, the next list item), so a huge answer without blank lines does not draw its
 * whole last block again for every chunk. Drawn the same way whole or streamed (text alone decides).
 */
export const LONG_BLOCK = 16_000;

/** A line that may begin a block without changing what the lines before it are. */
function continues(line: string): boolean {
  // Not indented (a list item's body, indented code), not a table row, not a heading underline.
  return /^[^\s|]/.test(line) && !/^(?:=+|-+)\s*$/.test(line);
}

/**
 * Where blocks start in `text`, from offset `from` (itself a block start, outside any fence):
 * at a line that follows a blank line outside fenced code and starts a block, and at a fence
 * that opens in the first column (it ends whatever came before). Once decided, a start stays
 * one whatever text is appended.
 */
export function blockStarts(text: string, from = 0): number[] {
  const starts = [from];
  let fence: Fence | null = null;
  let blank = false;
  let pos = from;
  while (pos < text.length) {
    const end = text.indexOf("\n", pos);
    const complete = end >= 0;
    const line = text.slice(pos, complete ? end : text.length);
    if (!fence && pos > from) {
      const fenceHere = complete && /^[`~]/.test(line) && opens(line) !== null;
      const tooLong = !blank && complete && pos - starts[starts.length - 1] > LONG_BLOCK && continues(line);
      if (blank ? startsBlock(line, complete) : fenceHere || tooLong) starts.push(pos);
    }
    if (!complete) break;
    if (fence) {
      if (closes(line, fence)) fence = null;
      blank = false;
    } else {
      fence = opens(line);
      blank = !fence && line.trim() === "";
    }
    pos = end + 1;
  }
  return starts;
}

/**
 * `source` as a fence, opened in the first column on a complete line, that is not closed yet:
 * its opening line and its body so far; else null.
 */
export function openFence(source: string): { head: string; body: string } | null {
  const end = source.indexOf("\n");
  if (end < 0 || !/^[`~]/.test(source)) return null;
  const fence = opens(source.slice(0, end));
  if (!fence) return null;
  const body = source.slice(end + 1);
  if (body.split("\n").some((line) => closes(line, fence))) return null;
  return { head: source.slice(0, end + 1), body };
}

export class Answer {
  readonly node: HTMLElement;
  text = "";
  private starts: number[] = [];
  private blocks: HTMLElement[] = [];
  /**
   * The last block while it is a fence still open: drawn as plain code, new text appended,
   * so a long code block streams at the cost of its new lines (highlighted once it closes).
   */
  private open: { index: number; head: string; body: string; text: Text } | null = null;

  constructor(className: string) {
    this.node = document.createElement("div");
    this.node.className = className;
  }

  /** Show `text`; when it extends what is shown, only the last block is drawn again. */
  update(text: string): void {
    if (!text.startsWith(this.text) || this.starts.length === 0) {
      this.node.replaceChildren();
      this.blocks = [];
      this.starts = [];
      this.open = null;
    }
    const from = this.starts.length ? this.starts[this.starts.length - 1] : 0;
    const kept = Math.max(this.starts.length - 1, 0);
    this.starts = [...this.starts.slice(0, kept), ...blockStarts(text, from)];
    this.text = text;
    for (let i = kept; i < this.starts.length; i++) {
      const source = text.slice(this.starts[i], i + 1 < this.starts.length ? this.starts[i + 1] : text.length);
      let block = this.blocks[i];
      if (!block) {
        block = document.createElement("div");
        block.className = "md-block";
        this.blocks.push(block);
        this.node.append(block);
      }
      this.draw(i, block, source);
    }
  }

  private draw(index: number, block: HTMLElement, source: string): void {
    const fence = openFence(source);
    const open = this.open;
    if (fence && open && open.index === index && open.head === fence.head && fence.body.startsWith(open.body)) {
      open.text.appendData(fence.body.slice(open.body.length));
      open.body = fence.body;
      return;
    }
    this.open = null;
    block.innerHTML = renderMarkdown(fence ? fence.head : source);
    const code = fence ? block.querySelector("code") : null;
    if (fence && code) {
      const text = document.createTextNode(fence.body);
      code.replaceChildren(text);
      this.open = { index, head: fence.head, body: fence.body, text };
    }
  }
}
