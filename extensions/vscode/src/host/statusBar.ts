/**
 * Index status in the status bar: a poll of `kiln/index/status` (cheap, answered mid-turn),
 * fast while a scan runs and slow once the index is ready.
 */

import * as vscode from "vscode";
import type { IndexStatus } from "../protocol/types";

export function statusText(status: IndexStatus | null, server: string): { text: string; tooltip: string } {
  if (server !== "running") {
    return { text: `$(circle-slash) Kiln: ${server}`, tooltip: "The Kiln server is not running. Click to restart." };
  }
  if (!status) return { text: "$(loading~spin) Kiln", tooltip: "Waiting for the index status" };
  if (status.error) return { text: "$(warning) Kiln index", tooltip: `Index error: ${status.error}` };
  const p = status.progress;
  if (status.state === "indexing" || status.state === "idle") {
    const pct = p && p.total > 0 ? ` ${Math.floor((100 * p.done) / p.total)}%` : "…";
    return { text: `$(sync~spin) Kiln: indexing${pct}`, tooltip: p ? `${p.done}/${p.total} files` : "Indexing" };
  }
  const files = typeof status.files === "number" ? status.files : p?.total ?? 0;
  const blocks = typeof status.blocks === "number" ? status.blocks : 0;
  return {
    text: `$(database) Kiln: ${files} files`,
    tooltip: `Index ${status.state ?? "ready"}: ${files} files, ${blocks} blocks${status.watching ? ", watching" : ""}`,
  };
}

/** "Show Index Status" as readable lines, not JSON. */
export function indexStatusReport(s: IndexStatus | null): string[] {
  if (!s) return ["Kiln index: no answer from the server yet."];
  const lines = [`Kiln index: ${s.state ?? "unknown"}${s.root ? ` — ${s.root}` : ""}`];
  const p = s.progress;
  if (s.state === "indexing" && p) lines.push(`Indexing: ${p.done} of ${p.total} files`);
  if (typeof s.files === "number") lines.push(`${s.files} files, ${typeof s.blocks === "number" ? s.blocks : 0} blocks`);
  const raw = s as Record<string, unknown>;
  if (typeof raw.db_bytes === "number") lines.push(`Database: ${(raw.db_bytes / 1048576).toFixed(1)} MB`);
  if (typeof raw.last_indexed === "number") lines.push(`Last indexed: ${new Date(raw.last_indexed * 1000).toLocaleString()}`);
  if (typeof raw.commits === "number" && raw.commits > 0) lines.push(`History: ${raw.commits} commits`);
  lines.push(s.watching ? "Watching for changes" : "Not watching for changes");
  if (s.error) lines.push(`Error: ${s.error}`);
  return lines;
}

export class IndexStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private server = "starting";
  private last: IndexStatus | null = null;

  constructor(private readonly fetch: () => Promise<IndexStatus> | undefined) {
    this.item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
    this.item.command = "kiln.showIndexStatus";
    this.paint();
    this.item.show();
  }

  setServer(state: string): void {
    this.server = state;
    this.paint();
    if (state === "running") void this.poll();
    else this.stopPolling();
  }

  async poll(): Promise<IndexStatus | null> {
    this.stopPolling();
    const pending = this.fetch();
    if (!pending) return null;
    try {
      this.last = await pending;
    } catch {
      this.last = { error: "status unavailable" };
    }
    this.paint();
    if (this.server === "running") {
      const busy = this.last?.state !== "ready";
      this.timer = setTimeout(() => void this.poll(), busy ? 1000 : 15000);
    }
    return this.last;
  }

  get status(): IndexStatus | null {
    return this.last;
  }

  private paint(): void {
    const { text, tooltip } = statusText(this.last, this.server);
    this.item.text = text;
    this.item.tooltip = tooltip;
  }

  private stopPolling(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.stopPolling();
    this.item.dispose();
  }
}
