/**
 * The chat webview in a real browser: Debian's chromium driven by playwright-core, loading the
 * extension's real page (webviewHtml, with its Content-Security-Policy), its built script and
 * stylesheet, fed a session recorded from a real `kiln lsp` (argv[2], written by
 * tests/extensions/test_webview_browser.py). The test plays the extension host: it answers the
 * panel's `complete` requests and records everything the panel posts.
 *
 * Checks: highlighted code with Copy/Insert/Apply, tool cards, the diff with per-hunk ticks,
 * file links, the `@` and `/` menus and pills, the pickers, and that an answer with remote
 * images makes no network request. Screenshots go to argv[3]. Prints one JSON line of results
 * and exits non-zero on the first failed check.
 */

import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { commandCompletions, mentionCompletions } from "../../src/protocol/completions";
import type { CommandItem, MentionItem, ModelList } from "../../src/protocol/types";
import { ORIGIN, openPanel, waitPosted } from "./page";

const [recordingPath, artifacts] = process.argv.slice(2);
const recording = JSON.parse(readFileSync(recordingPath, "utf8")) as {
  sessionId: string;
  updates: { sessionId: string; update: Record<string, unknown> }[];
  permission: { sessionId: string; toolCall: Record<string, unknown>; options: unknown[] };
  mentions: MentionItem[];
  commands: CommandItem[];
  pendingEdits: { proposalId: string; toolCallId: string; path: string; oldText: string | null; newText: string }[];
  models: ModelList;
};

async function main(): Promise<void> {
  mkdirSync(artifacts, { recursive: true });
  const { browser, page, requests, network, blockedByCsp, violations, send, posted } = await openPanel();

  await send({ type: "server", state: "running" });
  await send({ type: "config", mode: "ask", editMode: "ask", model: "" });
  await page.waitForSelector(".welcome:not([hidden])");
  await page.screenshot({ path: join(artifacts, "welcome.png") });

  await send({ type: "session", sessionId: recording.sessionId, title: "Fix calc" });
  await send({ type: "userMessage", text: "why does add fail?", references: [] });
  await send({ type: "turn", state: "running" });
  for (const n of recording.updates) await send({ type: "update", sessionId: n.sessionId, update: n.update });
  await send({
    type: "permission",
    requestId: "p1",
    sessionId: recording.permission.sessionId,
    toolCall: recording.permission.toolCall,
    options: recording.permission.options,
  });

  // Highlighted code with its three buttons.
  await page.waitForSelector(".code-block .hljs-keyword");
  const buttons = await page.$$eval(".code-block:first-of-type .code-action", (b) => b.map((x) => x.textContent));
  assert.deepEqual(buttons, ["Copy", "Insert", "Apply"]);
  await page.click(".code-block .code-action[data-action=apply]");
  const apply = (await posted()).find((m) => m.type === "codeAction");
  assert.equal(apply?.action, "apply");
  assert.match(String(apply?.code), /def add\(a, b\):/);
  assert.equal(apply?.target, "calc.py");

  // File names are file links (never http://calc.py); a click asks the host to open it.
  const hrefs = await page.$$eval(".message.agent a", (as) => as.map((a) => a.getAttribute("href")));
  assert.ok(!hrefs.some((h) => h && /^https?:\/\/calc\.py/.test(h)), JSON.stringify(hrefs));
  await page.click(".message.agent a.file-link[data-line]");
  const open = (await posted()).find((m) => m.type === "openFile");
  assert.deepEqual(open, { type: "openFile", path: "calc.py", line: 2 });

  // Remote images are links, not images; the data: image is shown.
  assert.equal(await page.locator(".message.agent img").count(), 1);
  assert.ok((await page.locator("a.remote-image").count()) >= 1);

  // Tool cards and the diff with one tick per hunk.
  assert.ok((await page.locator("details.tool").count()) >= 1);
  const hunkCount = await page.locator(".permission .hunk-keep").count();
  assert.equal(hunkCount, 2);
  await page.screenshot({ path: join(artifacts, "session.png"), fullPage: true });
  // Keep only the first hunk, then allow: the answer carries the kept text.
  await page.locator(".permission .hunk-keep").nth(1).uncheck();
  await page.click(".permission button.option.allow_once");
  const answer = (await posted()).find((m) => m.type === "permission");
  assert.equal(answer?.optionId, "allow_once");
  assert.match(String(answer?.newText), /return a \+ b/);
  assert.match(String(answer?.newText), /TOTAL = 0\n/);
  assert.doesNotMatch(String(answer?.newText), /TOTAL = 10/);
  await send({ type: "permissionClosed", requestId: "p1", reason: "answered" });
  await send({ type: "turn", state: "idle", stopReason: "end_turn" });

  // A deferred edit from the pending list, reviewed per hunk: keep only the second hunk.
  const edits = recording.pendingEdits.map(({ proposalId, toolCallId, path, oldText, newText }) => ({ proposalId, toolCallId, path, oldText, newText }));
  assert.equal(edits.length, 1);
  await send({ type: "pendingEdits", edits });
  const pendingTicks = page.locator(".pending-edit .hunk-keep");
  await pendingTicks.first().waitFor(); // the list renders after the message: count() does not wait
  const pendingHunks = await pendingTicks.count();
  await pendingTicks.nth(0).uncheck();
  await page.screenshot({ path: join(artifacts, "pending-edit.png"), fullPage: true });
  await page.click(".pending-edit button.apply");
  const resolve = await waitPosted(page, { type: "resolveEdit" });
  assert.equal(resolve.proposalId, edits[0].proposalId);
  assert.equal(resolve.decision, "accept");
  assert.match(String(resolve.newText), /return a - b/);
  assert.match(String(resolve.newText), /TOTAL = 10\n/);
  await send({ type: "pendingEdits", edits: [] });

  // The model picker offers what kiln/models/list answered.
  await send({ type: "models", ids: recording.models.models.map((m) => m.id) });
  // postMessage is delivered as a later task: the options exist once the panel has handled it
  await page.waitForFunction(
    (n) => document.querySelectorAll("#kiln-models option").length >= n,
    recording.models.models.length,
  );
  const offered = await page.$$eval("#kiln-models option", (o) => o.map((x) => x.getAttribute("value")));
  assert.deepEqual(offered, recording.models.models.map((m) => m.id));
  assert.ok(offered.length >= 1);

  // The @ menu: typing asks the host, which answers with the server's items.
  const input = page.locator("textarea.input");
  await input.click();
  await input.pressSequentially("explain @cal");
  const ask = await waitPosted(page, { type: "complete", query: "cal" });
  await send({ type: "completions", id: ask.id, items: mentionCompletions(recording.mentions) });
  await page.waitForSelector(".completion-menu:not([hidden]) .completion");
  await page.screenshot({ path: join(artifacts, "mention-menu.png") });
  await input.press("Enter");
  await page.waitForSelector(".pill");
  assert.match(await page.locator(".pill").first().innerText(), /@calc\.py/);
  await input.pressSequentially("please");
  await page.screenshot({ path: join(artifacts, "pills.png") });
  await input.press("Enter");
  const prompt = await waitPosted(page, { type: "prompt" });
  assert.match(String(prompt.text), /^explain @calc\.py please$/);
  assert.equal((prompt.context as { uri: string }[])[0].uri.endsWith("/calc.py"), true);

  // The / menu lists built-ins and the installed skill.
  await input.pressSequentially("/");
  const slash = await waitPosted(page, { type: "complete", trigger: "/" });
  await send({ type: "completions", id: slash.id, items: commandCompletions(recording.commands) });
  await page.waitForSelector(".completion-menu:not([hidden]) .completion");
  const labels = await page.$$eval(".completion-label", (l) => l.map((x) => x.textContent));
  for (const want of ["/clear", "/compact", "/mode", "/model", "/context", "/pdf"]) {
    assert.ok(labels.some((l) => l?.startsWith(want)), `${want} in ${JSON.stringify(labels)}`);
  }
  await page.screenshot({ path: join(artifacts, "slash-menu.png") });
  await input.press("Escape");

  // The mode picker.
  await page.selectOption("select.mode", "auto-edit");
  const mode = await waitPosted(page, { type: "setMode" });
  assert.equal(mode.mode, "auto-edit");

  // A raw remote <img> slipped into the page is still blocked by the policy.
  await page.evaluate(() => {
    const img = document.createElement("img");
    img.src = "https://attacker.example/csp-probe.png";
    document.body.append(img);
  });
  await page.waitForFunction(() => {
    const img = document.querySelector('img[src*="csp-probe"]') as HTMLImageElement | null;
    return img !== null && img.complete;
  });
  await page.screenshot({ path: join(artifacts, "final.png"), fullPage: true });
  await browser.close();

  const outside = network.filter((u) => !u.startsWith(ORIGIN));
  assert.deepEqual(outside, [], `the page made network requests: ${outside.join(", ")}`);
  // The answer's remote image was never even attempted; the raw probe was stopped by the policy.
  assert.ok(!requests.some((u) => u.includes("leak.png")), JSON.stringify(requests));
  assert.deepEqual(blockedByCsp, ["https://attacker.example/csp-probe.png"]);
  console.log(JSON.stringify({ ok: true, network, blockedByCsp, violations: violations.length, hunks: hunkCount, pendingHunks }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
