/**
 * Hunks of a whole-file edit, for reviewing a proposal hunk by hunk: a line diff (longest
 * common subsequence), grouped into hunks, and the text that results from keeping only some.
 */

export interface Hunk {
  /** First old line (0-based) the hunk replaces, and how many. */
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  /** Unified-diff lines: " ctx", "-old", "+new" (three lines of context around). */
  lines: string[];
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((l, i) => (i < lines.length - 1 || text.endsWith("\n") ? `${l}\n` : l));
}

/** Pairs of equal lines (old index, new index), in order. */
function common(a: string[], b: string[]): [number, number][] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - start;
  const m = endB - start;
  const table: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = a[start + i] === b[start + j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const pairs: [number, number][] = [];
  for (let k = 0; k < start; k++) pairs.push([k, k]);
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[start + i] === b[start + j]) {
      pairs.push([start + i, start + j]);
      i++;
      j++;
    } else if (table[i + 1][j] >= table[i][j + 1]) i++;
    else j++;
  }
  for (let k = 0; k < a.length - endA; k++) pairs.push([endA + k, endB + k]);
  return pairs;
}

export function hunks(oldText: string, newText: string, context = 3): Hunk[] {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  const pairs = [...common(a, b), [a.length, b.length] as [number, number]];
  const out: Hunk[] = [];
  let ia = 0;
  let ib = 0;
  for (const [pa, pb] of pairs) {
    if (pa > ia || pb > ib) {
      const before = a.slice(Math.max(0, ia - context), ia).map((l) => ` ${l}`);
      const after = a.slice(pa, Math.min(a.length, pa + context)).map((l) => ` ${l}`);
      out.push({
        oldStart: ia,
        oldCount: pa - ia,
        newStart: ib,
        newCount: pb - ib,
        lines: [...before, ...a.slice(ia, pa).map((l) => `-${l}`), ...b.slice(ib, pb).map((l) => `+${l}`), ...after],
      });
    }
    ia = pa + 1;
    ib = pb + 1;
  }
  return out;
}

/** The old text with only the hunks whose `keep` flag is true applied. */
export function keepHunks(oldText: string, newText: string, keep: boolean[]): string {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  const parts: string[] = [];
  let at = 0;
  hunks(oldText, newText, 0).forEach((h, i) => {
    parts.push(...a.slice(at, h.oldStart));
    parts.push(...(keep[i] ? b.slice(h.newStart, h.newStart + h.newCount) : a.slice(h.oldStart, h.oldStart + h.oldCount)));
    at = h.oldStart + h.oldCount;
  });
  parts.push(...a.slice(at));
  return parts.join("");
}
