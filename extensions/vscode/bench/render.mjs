// How the chat view's cost per streamed update grows with the transcript.
//
// Streams a long session (tool calls and chunked Markdown answers) into the real ChatView under
// jsdom and prints the mean time per host message early in the session and late in it. The
// early figure is the baseline; the ratio says how much a long transcript slows each update.
// Usage: npm run bench [-- ROUNDS]
import { build } from "esbuild";
import { JSDOM } from "jsdom";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const rounds = Number(process.argv[2] ?? 150);
const dir = mkdtempSync(join(tmpdir(), "kiln-bench-"));
const out = join(dir, "view.cjs");
await build({ entryPoints: ["src/webview/view.ts"], bundle: true, platform: "node", format: "cjs", outfile: out, logLevel: "warning" });

const dom = new JSDOM('<!DOCTYPE html><div id="kiln-root"></div>');
for (const k of ["document", "window", "HTMLElement", "Event", "KeyboardEvent"]) globalThis[k] = dom.window[k];
const { ChatView } = await import(out);
const view = new ChatView(dom.window.document.getElementById("kiln-root"), () => {});

const messages = [
  { type: "server", state: "running" },
  { type: "session", sessionId: "s", title: "bench" },
];
const words = "the quick **brown** fox `jumps` over the lazy dog and then\n".split(" ");
for (let r = 0; r < rounds; r++) {
  const id = `t${r}`;
  messages.push({ type: "update", sessionId: "s", update: { sessionUpdate: "tool_call", toolCallId: id, title: `read_file: src/mod${r}.py`, kind: "read", status: "in_progress" } });
  messages.push({ type: "update", sessionId: "s", update: { sessionUpdate: "tool_call_update", toolCallId: id, status: "completed", content: [{ type: "content", content: { type: "text", text: "x = 1\n".repeat(40) } }] } });
  for (let c = 0; c < 20; c++) {
    messages.push({ type: "update", sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: words.slice(0, 4 + (c % 8)).join(" ") + " " } } });
  }
}

const times = [];
for (const m of messages) {
  const t0 = performance.now();
  view.receive(m);
  times.push(performance.now() - t0);
}
const tenth = Math.max(1, Math.floor(times.length / 10));
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const early = mean(times.slice(2, 2 + tenth));
const late = mean(times.slice(-tenth));
console.log(`messages: ${messages.length}, transcript entries at the end: ${view.state.entries.length}`);
console.log(`mean per message, first 10%: ${early.toFixed(3)} ms (baseline)`);
console.log(`mean per message, last 10%:  ${late.toFixed(3)} ms`);
console.log(`late / early: ${(late / early).toFixed(2)}x`);
rmSync(dir, { recursive: true, force: true });
