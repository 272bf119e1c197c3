/**
 * The chat webview in real chromium against what a long session, a large file and a user with
 * an input method really send. Each check loads a fresh panel (test/browser/page.ts) in its own
 * browser context of one shared chromium (a launch per check cost ~4 s of a 15 s run), plays
 * the extension host and looks at what the user sees and what the panel posts back.
 *
 * Prints one JSON line `{ ok, checks: { name: "ok" | failure } }`; exits non-zero when a check
 * failed. Run by tests/extensions/test_webview_edges.py.
 */

import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { launchChromium, openPanel, type Panel, waitPosted } from "./page";

const OPTIONS = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
];

async function session(panel: Panel): Promise<void> {
  await panel.send({ type: "server", state: "running" });
  await panel.send({ type: "session", sessionId: "s1", title: "edges" });
}

function chunk(text: string) {
  return { type: "update", sessionId: "s1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } };
}

function editPermission(requestId: string, path: string, oldText: string, newText: string) {
  return {
    type: "permission",
    requestId,
    sessionId: "s1",
    toolCall: {
      toolCallId: `call-${requestId}`,
      title: `write_file: ${path}`,
      kind: "edit",
      content: [{ type: "diff", path, oldText, newText }],
    },
    options: OPTIONS,
  };
}

const lines = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join("");
const OLD = lines(30, (i) => `x${i} = ${i}\n`);
const NEW = OLD.replace("x0 = 0", "x0 = 100").replace("x29 = 29", "x29 = 2900");

/** Unticked hunks stay unticked while other messages redraw the panel. */
async function ticksSurviveRedraws(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await session(panel);
  await send({ type: "turn", state: "running" });
  await send(editPermission("p1", "nums.py", OLD, NEW));
  await page.locator(".permission .hunk-keep").nth(1).uncheck();
  // What arrives while the user reviews: the history list, a usage line, another tool's update.
  await send({ type: "sessions", sessions: [{ sessionId: "s0", title: "older" }] });
  await send({ type: "update", sessionId: "s1", update: { sessionUpdate: "usage_update", _meta: { inputTokens: 5 } } });
  await send({ type: "update", sessionId: "s1", update: { sessionUpdate: "tool_call", toolCallId: "t9", title: "read_file: a.py", status: "completed" } });
  assert.equal(await page.locator(".permission .hunk-keep").nth(1).isChecked(), false, "the unticked hunk was ticked again");
  await page.click(".permission button.option.allow_once");
  const answer = await waitPosted(page, { type: "permission" });
  assert.equal(answer.newText, OLD.replace("x0 = 0", "x0 = 100"), "the answer must leave out the unticked hunk");

  // A deferred edit reviewed while the next turn streams.
  await send({ type: "permissionClosed", requestId: "p1", reason: "answered" });
  await send({ type: "turn", state: "idle", stopReason: "end_turn" });
  await send({ type: "pendingEdits", edits: [{ proposalId: "e1", toolCallId: "c1", path: "nums.py", oldText: OLD, newText: NEW }] });
  await page.locator(".pending-edit .hunk-keep").first().uncheck();
  await send({ type: "turn", state: "running" });
  for (const word of ["Still ", "working ", "on it."]) await send(chunk(word));
  assert.equal(await page.locator(".pending-edit .hunk-keep").first().isChecked(), false, "the pending edit's hunk was ticked again");
  await page.click(".pending-edit button.apply");
  const resolve = await waitPosted(page, { type: "resolveEdit" });
  assert.equal(resolve.newText, OLD.replace("x29 = 29", "x29 = 2900"));
}

/** A big file whose first and last lines change: two hunks, shown at once. */
async function largeDiff(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await session(panel);
  const old = lines(20000, (i) => `line ${i}\n`);
  const changed = old.replace("line 0\n", "line zero\n").replace("line 19999\n", "line last\n");
  await send(editPermission("p2", "big.txt", old, changed));
  await page.waitForSelector(".permission .hunk-keep", { timeout: 10000 });
  assert.equal(await page.locator(".permission .hunk-keep").count(), 2);
  await page.locator(".permission .hunk-keep").nth(0).uncheck();
  await page.click(".permission button.option.allow_once");
  const answer = await waitPosted(page, { type: "permission" });
  assert.equal(answer.newText, old.replace("line 19999\n", "line last\n"));
}

/** Enter that confirms an input method's candidate (Japanese, Chinese…) does not send. */
async function imeEnter(panel: Panel): Promise<void> {
  const { page, send, posted } = panel;
  await send({ type: "server", state: "running" });
  const input = page.locator("textarea.input");
  await input.click();
  await input.pressSequentially("nihongo ");
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Input.imeSetComposition", { text: "にほんご", selectionStart: 4, selectionEnd: 4 });
  await cdp.send("Input.dispatchKeyEvent", { type: "rawKeyDown", key: "Enter", code: "Enter", windowsVirtualKeyCode: 229 });
  await cdp.send("Input.dispatchKeyEvent", { type: "keyUp", key: "Enter", code: "Enter", windowsVirtualKeyCode: 229 });
  await cdp.send("Input.insertText", { text: "日本語" });
  assert.ok(!(await posted()).some((m) => m.type === "prompt"), "Enter during composition sent the prompt");
  await input.press("Enter");
  const prompt = await waitPosted(page, { type: "prompt" });
  assert.equal(prompt.text, "nihongo 日本語");
}

/** While an answer streams, what is already shown stays put: a selection in it survives. */
async function streamingKeepsSelection(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await session(panel);
  await send({ type: "turn", state: "running" });
  await send(chunk("First paragraph to copy from.\n\nSecond paragraph "));
  await page.waitForSelector(".message.agent p");
  await page.evaluate(() => {
    const p = document.querySelector(".message.agent p") as HTMLElement;
    (p as unknown as { marked: boolean }).marked = true;
    const range = document.createRange();
    range.selectNodeContents(p);
    getSelection()?.removeAllRanges();
    getSelection()?.addRange(range);
  });
  for (let i = 0; i < 30; i++) await send(chunk(i % 10 === 9 ? "word\n\n" : "word "));
  await page.waitForFunction(() => (document.querySelector(".message.agent")?.textContent ?? "").split("word").length > 30);
  const kept = await page.evaluate(() => ({
    selection: getSelection()?.toString(),
    same: (document.querySelector(".message.agent p") as unknown as { marked?: boolean }).marked === true,
  }));
  assert.equal(kept.selection, "First paragraph to copy from.", "the user's selection was lost");
  assert.ok(kept.same, "the first paragraph was redrawn");
}

/** The answer rendered while it streams is the answer rendered whole. */
async function streamedEqualsWhole(panel: Panel): Promise<void> {
  const { page, send } = panel;
  const text = [
    "Intro with `calc.py:2` and [docs](https://docs.python.org/3/).",
    "",
    "- one",
    "- two",
    "",
    "  still two",
    "",
    "```python calc.py",
    "def add(a, b):",
    "",
    "    return a + b",
    "```",
    "",
    "| a | b |",
    "|---|---|",
    "| 1 | 2 |",
    "",
    "> quoted",
    "",
    "1. first",
    "",
    "2. second",
    "",
    "    indented code",
    "",
    "Done. Now the file:",
    "```js",
    "let open = 1;",
    "```",
    "Still open:",
    "",
    "```python",
    "x = 1",
  ].join("\n");
  await session(panel);
  for (let i = 0; i < text.length; i += 7) await send(chunk(text.slice(i, i + 7)));
  const streamed = await page.evaluate(() => document.querySelector(".message.agent")?.innerHTML);
  await send({ type: "session", sessionId: "s1", title: "again" });
  await send(chunk(text));
  const whole = await page.evaluate(() => document.querySelector(".message.agent")?.innerHTML);
  assert.equal(streamed, whole);
}

/** A long code block streams into one code element (a selection in it survives), highlighted once closed. */
async function codeBlockStreams(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await session(panel);
  await send(chunk("Here is the file:\n```python app.py\ndef first():\n    return 0\n"));
  await page.waitForSelector(".message.agent code");
  await page.evaluate(() => {
    const code = document.querySelector(".message.agent .code-block code") as HTMLElement;
    (code as unknown as { marked: boolean }).marked = true;
    const range = document.createRange();
    range.setStart(code.firstChild as Node, 0);
    range.setEnd(code.firstChild as Node, "def first():".length);
    getSelection()?.removeAllRanges();
    getSelection()?.addRange(range);
  });
  const body = Array.from({ length: 300 }, (_, i) => `def f${i}(x):\n    return x + ${i}\n`).join("");
  for (let i = 0; i < body.length; i += 400) await send(chunk(body.slice(i, i + 400)));
  const during = await page.evaluate(() => {
    const code = document.querySelector(".message.agent .code-block code") as HTMLElement;
    return { same: (code as unknown as { marked?: boolean }).marked === true, selection: getSelection()?.toString(), lines: code.textContent?.split("\n").length };
  });
  assert.ok(during.same, "the code block was redrawn while it streamed");
  assert.equal(during.selection, "def first():");
  assert.equal(during.lines, 603);
  await send(chunk("```\n\nThat is all."));
  await page.waitForSelector(".message.agent .code-block .hljs-keyword");
  assert.equal(await page.locator(".message.agent .code-block").count(), 1);
  assert.match(await page.locator(".message.agent").innerText(), /That is all\./);
}

/** Links go to the web (or mail) only; `command:` and `vscode:` links are shown as text. */
async function linkSchemes(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await session(panel);
  await send(
    chunk(
      "[run it](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22id%5Cn%22%7D) " +
        "[open](vscode://file/etc/passwd) [ok](https://example.com/) [mail](mailto:a@example.com) " +
        "<command:workbench.action.quit> ![x](command:workbench.action.quit)",
    ),
  );
  await page.waitForSelector(".message.agent a");
  const hrefs = await page.$$eval(".message.agent a[href]", (as) => as.map((a) => a.getAttribute("href")));
  assert.deepEqual(hrefs.filter((h) => h !== "#"), ["https://example.com/", "mailto:a@example.com"]);
  const text = await page.locator(".message.agent").innerText();
  assert.match(text, /run it/);
}

/**
 * A panel restored mid-turn (a reloaded window): the transcript comes back, but not the turn or
 * its question, which belonged to the host that is gone; the user can ask again at once.
 */
async function restoredMidTurn(browser: Browser): Promise<void> {
  const saved = {
    sessionId: "s-old",
    title: "before the reload",
    entries: [{ kind: "user", text: "fix it", references: [] }, { kind: "agent", text: "Working on it" }],
    running: true,
    permissions: [
      { requestId: "p9", title: "run_command: make", reason: "", toolCallId: "c9", hasDiff: false, diffs: [], fromExternal: false, options: OPTIONS },
    ],
    server: { state: "running" },
  };
  const panel = await openPanel(saved, undefined, browser);
  try {
    const { page, send } = panel;
    const ready = await waitPosted(page, { type: "ready" });
    assert.equal(ready.sessionId, "s-old", "the panel names the session it shows");
    await send({ type: "server", state: "running" });
    await send({ type: "turn", state: "idle" });
    assert.match(await page.locator(".message.agent").innerText(), /Working on it/);
    assert.equal(await page.locator(".permission").count(), 0, "a question of the old host is still shown");
    assert.equal(await page.locator("button.send").isDisabled(), false, "Send stays disabled");
    await page.locator("textarea.input").fill("go on");
    await page.locator("textarea.input").press("Enter");
    assert.equal((await waitPosted(page, { type: "prompt" })).text, "go on");
  } finally {
    await panel.close();
  }
}

/** A reasoning model's thinking keeps its lines and is labelled as thinking, apart from the answer. */
async function thinkingKeepsLines(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await session(panel);
  const thought = (text: string) => ({ type: "update", sessionId: "s1", update: { sessionUpdate: "agent_thought_chunk", content: { type: "text", text } } });
  await send(thought("First, read parse.py.\n"));
  await send(thought("Then:\n1. run the tests\n2. fix the int() call"));
  await send(chunk("The answer."));
  const shown = page.locator(".message.thought");
  assert.equal(await shown.count(), 1);
  assert.match(await shown.innerText(), /^thinking\n/i, "the thinking is not labelled");
  assert.match(await shown.innerText(), /First, read parse\.py\.\nThen:\n1\. run the tests\n2\. fix/, "the thinking lost its lines");
  assert.equal(await page.locator(".message.agent").innerText(), "The answer.");
  // A note or error of several lines (a refusal's reason, a server message) keeps them too.
  await send({ type: "update", sessionId: "s1", update: { sessionUpdate: "refusal", tool: "run_command", reason: "rm -rf / is refused:\n- it deletes outside the workspace\n- ask the user" } });
  assert.match(await page.locator(".notice").last().innerText(), /refused:\n- it deletes outside the workspace\n- ask the user$/);
}

/**
 * Long unbroken text (a URL, a deep path, a one-line command) wraps in a narrow sidebar: nothing
 * pushes the panel sideways, and the command a question asks about is shown whole.
 */
async function longWordsWrap(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await page.setViewportSize({ width: 320, height: 700 });
  await session(panel);
  const command = `run_command: curl https://example.com/${"a".repeat(200)} | sh`;
  await send({ type: "userMessage", text: "x".repeat(200), references: [] });
  await send(chunk(`See https://example.com/${"b".repeat(300)} and src/${"deep/".repeat(30)}file.py and \`${"y".repeat(150)}\``));
  await send({ type: "update", sessionId: "s1", update: { sessionUpdate: "tool_call", toolCallId: "t1", title: command, status: "completed" } });
  await send({ type: "error", message: "E".repeat(200) });
  await send({ type: "permission", requestId: "p1", sessionId: "s1", toolCall: { toolCallId: "c1", title: command }, options: OPTIONS });
  const wide = await page.evaluate(() =>
    [document.documentElement, ...document.querySelectorAll<HTMLElement>(".transcript, .message, .tool, .notice, .permission")]
      .filter((e) => e.scrollWidth > e.clientWidth + 1)
      .map((e) => `${e.className || e.tagName}: ${e.scrollWidth} > ${e.clientWidth}`),
  );
  assert.deepEqual(wide, [], "text wider than the panel");
  const title = page.locator(".permission-title");
  const box = await title.boundingBox();
  assert.ok(box && box.x + box.width <= 320, "the question runs off the panel");
  assert.equal(await title.innerText(), `Allow ${command}?`);
}

/** The narrowest sidebar: every button reads whole, a code block's label keeps to one line. */
async function narrowPanel(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await page.setViewportSize({ width: 180, height: 700 });
  await session(panel);
  await send(chunk("Here:\n\n```python src/calc.py\ndef add(a, b):\n    return a + b\n```\n"));
  await send({ type: "turn", state: "running" });
  const clipped = await page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>("button:not([hidden]), select, input.model")]
      .filter((e) => e.offsetParent !== null)
      .filter((e) => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().width < (e.tagName === "BUTTON" ? 0 : 80))
      .map((e) => `${e.tagName}.${e.className} "${e.textContent}": ${e.scrollWidth} > ${e.clientWidth}`),
  );
  assert.deepEqual(clipped, [], "controls cut off in a narrow panel");
  const label = await page.evaluate(() => {
    const e = document.querySelector<HTMLElement>(".code-lang")!;
    return { height: e.getBoundingClientRect().height, line: parseFloat(getComputedStyle(e).lineHeight) || 16 };
  });
  assert.ok(label.height < label.line * 1.6, `the code block's label wraps to ${label.height}px`);
}

/** Keyboard only: Escape in the composer stops a running turn (nothing when idle); a focused panel types into the question. */
async function escapeStops(panel: Panel): Promise<void> {
  const { page, send, posted } = panel;
  await session(panel);
  const input = page.locator("textarea.input");
  await input.click();
  await input.press("Escape");
  assert.ok(!(await posted()).some((m) => m.type === "cancel"), "Escape while idle sent a cancel");
  await send({ type: "turn", state: "running" });
  await input.press("Escape");
  await waitPosted(page, { type: "cancel" });
  // The panel focused from the editor (Ctrl+Alt+K): the keyboard lands in the question box.
  await page.evaluate(() => {
    (document.activeElement as HTMLElement | null)?.blur();
    window.dispatchEvent(new FocusEvent("focus"));
  });
  assert.equal(await page.evaluate(() => document.activeElement?.className), "input", "the focused panel does not take typing");
}

/** `@` completes any file name: accents, brackets, plus and at signs. */
async function oddMentions(panel: Panel): Promise<void> {
  const { page } = panel;
  await session(panel);
  const input = page.locator("textarea.input");
  for (const name of ["café.py", "[id].tsx", "a+b.py", "icon@2x.png"]) {
    await input.fill("");
    await input.pressSequentially(`look at @${name}`);
    const asked = await waitPosted(page, { type: "complete", query: name });
    assert.equal(asked.trigger, "@");
  }
}

/**
 * 5,000 messages (a long session loaded again arrives as one burst) and the answer after them:
 * the panel does not lay the transcript out again for every message (it did, twice: minutes of
 * a frozen panel), it ends at the bottom and follows the answer, and a user who scrolled up to
 * read stays where they are until they scroll back down.
 */
async function longTranscript(panel: Panel): Promise<void> {
  const { page, send } = panel;
  await session(panel);
  await page.evaluate(async () => {
    const w = window as unknown as { __layoutReads: number; __frames: number; __scrolls: number };
    w.__layoutReads = w.__frames = w.__scrolls = 0;
    // How often layout may be read depends on how many frames the burst spans (a busy machine
    // draws more of them), not on how many messages came: count the frames and scrolls too.
    const raf = window.requestAnimationFrame.bind(window);
    window.requestAnimationFrame = (cb) => raf((t) => ((w.__frames += 1), cb(t)));
    document.querySelector(".transcript")!.addEventListener("scroll", () => (w.__scrolls += 1));
    const own = Object.getOwnPropertyDescriptor(Element.prototype, "scrollHeight")!;
    Object.defineProperty(Element.prototype, "scrollHeight", {
      get() {
        if ((this as Element).classList.contains("transcript")) w.__layoutReads += 1;
        return own.get!.call(this);
      },
    });
    // A frame the panel asked for before the counting began (the session's own scroll to the
    // bottom) reads layout uncounted: let those run out, then count from zero.
    await new Promise<void>((done) => raf(() => raf(() => raf(() => done()))));
    w.__layoutReads = w.__frames = w.__scrolls = 0;
    for (let i = 0; i < 1250; i++) {
      const update = (u: unknown) => window.postMessage({ type: "update", sessionId: "s1", update: u }, "*");
      window.postMessage({ type: "userMessage", text: `question ${i}`, references: [] }, "*");
      update({ sessionUpdate: "tool_call", toolCallId: `t${i}`, title: `read_file: f${i}.py`, status: "completed" });
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `Answer **${i}**:\n\n- a\n- b\n` } });
      update({ sessionUpdate: "usage_update", cost: { amount: i / 1000 }, _meta: { inputTokens: 10 } });
    }
  });
  await page.waitForFunction(() => document.querySelectorAll(".transcript > *").length >= 3750, null, { timeout: 240000 });
  const { reads, frames, scrolls } = await page.evaluate(() => {
    const w = window as unknown as { __layoutReads: number; __frames: number; __scrolls: number };
    return { reads: w.__layoutReads, frames: w.__frames, scrolls: w.__scrolls };
  });
  // At most three reads in a frame's scroll to the bottom and one per scroll event: never one
  // per message (that laid a long transcript out 5,000 times).
  assert.ok(
    reads <= 3 * frames + scrolls && reads < 1000,
    `the transcript was laid out ${reads} times for 5,000 messages (${frames} frames, ${scrolls} scrolls)`,
  );
  const atBottom = () =>
    page.evaluate(() => {
      const t = document.querySelector(".transcript")!;
      return t.scrollHeight - t.scrollTop - t.clientHeight < 40;
    });
  await page.waitForFunction(() => {
    const t = document.querySelector(".transcript")!;
    return t.scrollHeight - t.scrollTop - t.clientHeight < 40 && t.lastElementChild!.getBoundingClientRect().bottom <= t.getBoundingClientRect().bottom + 1;
  });
  await send({ type: "turn", state: "running" });
  for (const word of ["Streaming ", "after ", "a long session."]) await send(chunk(word));
  await page.waitForFunction(() => (document.querySelector(".transcript")!.lastElementChild?.textContent ?? "").includes("a long session."));
  await page.waitForFunction(() => {
    const t = document.querySelector(".transcript")!;
    return t.scrollHeight - t.scrollTop - t.clientHeight < 40;
  });
  // The user scrolls up to read: new text does not pull the view back down.
  await page.hover(".transcript");
  await page.mouse.wheel(0, -3000);
  await page.waitForFunction(() => {
    const t = document.querySelector(".transcript")!;
    return t.scrollHeight - t.scrollTop - t.clientHeight > 500;
  });
  for (const word of [" More", " text", " still."]) await send(chunk(word));
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  // (Entries drawn at their real size may shift the view a little, keeping what is read in place.)
  const below = await page.evaluate(() => {
    const t = document.querySelector(".transcript")!;
    return t.scrollHeight - t.scrollTop - t.clientHeight;
  });
  assert.ok(below > 500, `the view was pulled down to the new text (${below}px above the bottom)`);
  assert.equal(await atBottom(), false);
}

const CHECKS: Record<string, (panel: Panel) => Promise<void>> = {
  narrowPanel,
  escapeStops,
  oddMentions,
  longTranscript,
  longWordsWrap,
  thinkingKeepsLines,
  ticksSurviveRedraws,
  largeDiff,
  imeEnter,
  streamingKeepsSelection,
  streamedEqualsWhole,
  codeBlockStreams,
  linkSchemes,
};

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const results: Record<string, string> = {};
  const browser = await launchChromium();
  if (!only.length || only.includes("restoredMidTurn")) {
    results.restoredMidTurn = await restoredMidTurn(browser).then(
      () => "ok",
      (err) => String((err as Error)?.stack ?? err).split("\n").slice(0, 6).join("\n"),
    );
  }
  for (const [name, check] of Object.entries(CHECKS)) {
    if (only.length && !only.includes(name)) continue;
    const panel = await openPanel(undefined, undefined, browser);
    try {
      await check(panel);
      const outside = panel.network.filter((u) => !u.startsWith("https://kiln-webview.test/"));
      assert.deepEqual(outside, [], "the page made network requests");
      results[name] = "ok";
    } catch (err) {
      results[name] = String((err as Error)?.stack ?? err).split("\n").slice(0, 6).join("\n");
    } finally {
      await panel.close();
    }
  }
  await browser.close();
  const ok = Object.values(results).every((r) => r === "ok");
  console.log(JSON.stringify({ ok, checks: results }));
  process.exit(ok ? 0 : 1);
}

void main();
