/**
 * Per-hunk review in the panel: a file's diff drawn hunk by hunk, each with a "keep" tick.
 * Used by permission cards (edits asked as questions) and by pending deferred edits; both
 * answer with the file as the user kept it when some hunk was unticked.
 */

import { hunks, keepHunks } from "../protocol/hunks";

export interface FileDiff {
  path: string;
  oldText: string;
  newText: string;
}

export interface HunkReview {
  node: HTMLElement;
  /** The file with only the ticked hunks, or undefined when every hunk is kept. */
  kept(): string | undefined;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The diff of `d`; with `ticks`, one "keep" checkbox per hunk (all ticked at first). */
export function hunkReview(d: FileDiff, ticks: boolean): HunkReview {
  const file = el("div", { class: "diff" });
  file.append(el("div", { class: "diff-path" }, d.path.split("/").slice(-2).join("/")));
  const keep: boolean[] = [];
  hunks(d.oldText, d.newText).forEach((h, i) => {
    const hunk = el("div", { class: "hunk" });
    if (ticks) {
      keep.push(true);
      const tick = el("input", { type: "checkbox", class: "hunk-keep", title: "Keep this hunk" });
      tick.checked = true;
      tick.addEventListener("change", () => (keep[i] = tick.checked));
      const label = el("label", { class: "hunk-label" });
      const last = h.oldStart + Math.max(h.oldCount, 1);
      label.append(tick, el("span", {}, ` hunk ${i + 1}: lines ${h.oldStart + 1}–${last}`));
      hunk.append(label);
    }
    const pre = el("pre", { class: "hunk-lines" });
    for (const line of h.lines) {
      const cls = line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx";
      pre.append(el("span", { class: cls }, line.endsWith("\n") ? line : `${line}\n`));
    }
    hunk.append(pre);
    file.append(hunk);
  });
  return {
    node: file,
    kept: () => (keep.some((k) => !k) ? keepHunks(d.oldText, d.newText, keep) : undefined),
  };
}
