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

/**
 * Pairs of equal lines (old index, new index), in order: the common prefix and suffix, and
 * between them a shortest edit script (Myers' O(ND) diff, so a big file with a few changes is
 * cheap in time and memory). When the middle differs in more than the budget allows, it is
 * one change: a rewritten file is reviewed as one hunk rather than freezing the panel.
 */
function common(a: string[], b: string[], budget = 20_000_000): [number, number][] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const pairs: [number, number][] = [];
  for (let k = 0; k < start; k++) pairs.push([k, k]);
  pairs.push(...middle(a.slice(start, endA), b.slice(start, endB), budget).map(([i, j]) => [start + i, start + j] as [number, number]));
  for (let k = 0; k < a.length - endA; k++) pairs.push([endA + k, endB + k]);
  return pairs;
}

/** Myers' greedy diff of `a` and `b`: their equal line pairs, or none past `budget` steps. */
function middle(a: string[], b: string[], budget: number): [number, number][] {
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0) return [];
  const ids = new Map<string, number>();
  const id = (line: string) => {
    let v = ids.get(line);
    if (v === undefined) ids.set(line, (v = ids.size));
    return v;
  };
  const x1 = Int32Array.from(a, id);
  const y1 = Int32Array.from(b, id);
  // trace[d][k + d]: the furthest x reached on diagonal k with d changes.
  const trace: Int32Array[] = [];
  let work = 0;
  for (let d = 0; d <= n + m; d++) {
    const v = new Int32Array(2 * d + 1);
    const prev = trace[d - 1];
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (d === 0) x = 0;
      else if (k === -d || (k !== d && prev[k - 1 + d - 1] < prev[k + 1 + d - 1])) x = prev[k + 1 + d - 1];
      else x = prev[k - 1 + d - 1] + 1;
      let y = x - k;
      while (x < n && y < m && x1[x] === y1[y]) {
        x++;
        y++;
      }
      v[k + d] = x;
      work += 1;
      if (x >= n && y >= m) {
        trace.push(v);
        return backtrack(trace, n, m);
      }
    }
    trace.push(v);
    work += d;
    if (work > budget) return [];
  }
  return [];
}

function backtrack(trace: Int32Array[], n: number, m: number): [number, number][] {
  const pairs: [number, number][] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d > 0; d--) {
    const prev = trace[d - 1];
    const k = x - y;
    const down = k === -d || (k !== d && prev[k - 1 + d - 1] < prev[k + 1 + d - 1]);
    const pk = down ? k + 1 : k - 1;
    const px = prev[pk + d - 1];
    const py = px - pk;
    // The snake after the step: equal lines back to where the step landed.
    const sx = down ? px : px + 1;
    const sy = sx - k;
    while (x > sx && y > sy) pairs.push([--x, --y]);
    x = px;
    y = py;
  }
  while (x > 0 && y > 0) pairs.push([--x, --y]);
  return pairs.reverse();
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
