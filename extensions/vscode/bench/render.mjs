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

// pretendToBeVisual: the view scrolls to the bottom at the next animation frame.
const dom = new JSDOM('<!DOCTYPE html><div id="kiln-root"></div>', { pretendToBeVisual: true });
for (const k of ["document", "window", "HTMLElement", "Event", "KeyboardEvent", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[k] = dom.window[k];
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

// One long answer streamed in small chunks (paragraphs and code blocks): the cost per chunk
// late in the answer against early in it. Redrawing the whole answer per chunk grows with its
// length; redrawing its last block does not.
const answer = new ChatView(dom.window.document.getElementById("kiln-root"), () => {});
answer.receive({ type: "server", state: "running" });
answer.receive({ type: "session", sessionId: "a", title: "long answer" });
const para = "Some **bold** prose about `calc.py:12` and the [docs](https://example.com/) here. ";
const longText = Array.from({ length: 120 }, (_, i) =>
  i % 4 === 3 ? "```python\n" + "def f(x):\n    return x + 1\n".repeat(6) + "```\n\n" : para.repeat(3) + "\n\n",
).join("");
const chunks = [];
for (let i = 0; i < longText.length; i += 24) chunks.push(longText.slice(i, i + 24));
const answerTimes = [];
for (const text of chunks) {
  const t0 = performance.now();
  answer.receive({ type: "update", sessionId: "a", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
  answerTimes.push(performance.now() - t0);
}
const slice = Math.max(1, Math.floor(answerTimes.length / 10));
const first = mean(answerTimes.slice(0, slice));
const last = mean(answerTimes.slice(-slice));
console.log(`one answer: ${longText.length} characters in ${chunks.length} chunks`);
console.log(`mean per chunk, first 10%: ${first.toFixed(3)} ms (baseline)`);
console.log(`mean per chunk, last 10%:  ${last.toFixed(3)} ms`);
console.log(`late / early: ${(last / first).toFixed(2)}x`);

// One code block of 200 functions streamed into a fresh session: the cost per chunk late in
// the block against early in it (a block redrawn and highlighted per chunk grows with it).
const coder = new ChatView(dom.window.document.getElementById("kiln-root"), () => {});
coder.receive({ type: "server", state: "running" });
coder.receive({ type: "session", sessionId: "c", title: "code" });
const code = "Here:\n\n```python app.py\n" + Array.from({ length: 200 }, (_, i) => `def f${i}(x):\n    return x + ${i}  # comment\n`).join("") + "```\n";
const codeTimes = [];
for (let i = 0; i < code.length; i += 24) {
  const t0 = performance.now();
  coder.receive({ type: "update", sessionId: "c", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: code.slice(i, i + 24) } } });
  codeTimes.push(performance.now() - t0);
}
const codeSlice = Math.max(1, Math.floor(codeTimes.length / 10));
console.log(`one code block: ${code.length} characters in ${codeTimes.length} chunks`);
console.log(`mean per chunk, first 10%: ${mean(codeTimes.slice(0, codeSlice)).toFixed(3)} ms (baseline)`);
console.log(`mean per chunk, last 10%:  ${mean(codeTimes.slice(-codeSlice)).toFixed(3)} ms`);
console.log(`late / early: ${(mean(codeTimes.slice(-codeSlice)) / mean(codeTimes.slice(0, codeSlice))).toFixed(2)}x`);
rmSync(dir, { recursive: true, force: true });
