/**
 * The chat panel in Debian's chromium (playwright-core), as the browser tests load it: the real
 * page (webviewHtml, with its Content-Security-Policy), `dist/webview.js` and `dist/webview.css`
 * served from a fake origin, every other request refused and logged, and VS Code's webview API
 * stood in for by a recorder of what the panel posts.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { webviewHtml } from "../../src/host/webviewHtml";

export const ORIGIN = "https://kiln-webview.test";
const dist = join(__dirname, "..", "..", "dist");

export interface Panel {
  browser: Browser;
  page: Page;
  /** Closes the panel's own browser context; the browser too when it was launched for it. */
  close(): Promise<void>;
  /** Every request the page started; those that reached the route handler; those the CSP stopped. */
  requests: string[];
  network: string[];
  blockedByCsp: string[];
  violations: string[];
  /** A host → webview message, as `webview.postMessage` delivers it. */
  send(message: unknown): Promise<void>;
  /** Everything the panel posted to the host so far. */
  posted(): Promise<Record<string, unknown>[]>;
}

/** Debian's chromium, headless; several panels may share one (each gets its own context). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.KILN_CHROMIUM || "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * `saved`: the state VS Code gives back to a panel it restores (`getState`). `shared`: a browser
 * to open the panel in (a fresh context: its own storage, requests and routes), else its own.
 */
export async function openPanel(
  saved?: unknown,
  viewport = { width: 520, height: 900 },
  shared?: Browser,
): Promise<Panel> {
  const browser = shared ?? (await launchChromium());
  const context = await browser.newContext({ viewport });
  const requests: string[] = [];
  const network: string[] = [];
  const blockedByCsp: string[] = [];
  const violations: string[] = [];
  context.on("request", (r) => requests.push(r.url()));
  context.on("requestfailed", (r) => {
    if (r.failure()?.errorText === "csp") blockedByCsp.push(r.url());
  });
  await context.route("**/*", async (route) => {
    const url = route.request().url();
    network.push(url);
    if (url === `${ORIGIN}/`) {
      const html = webviewHtml(ORIGIN, `${ORIGIN}/dist/webview.js`, `${ORIGIN}/dist/webview.css`);
      return route.fulfill({ contentType: "text/html", body: html });
    }
    if (url === `${ORIGIN}/dist/webview.js`) {
      return route.fulfill({ contentType: "text/javascript", body: readFileSync(join(dist, "webview.js")) });
    }
    if (url === `${ORIGIN}/dist/webview.css`) {
      return route.fulfill({ contentType: "text/css", body: readFileSync(join(dist, "webview.css")) });
    }
    return route.abort();
  });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  await page.addInitScript((restored) => {
    const w = window as unknown as { __posted: unknown[]; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    let state: unknown = restored ?? undefined;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => w.__posted.push(m),
      getState: () => state,
      setState: (s: unknown) => (state = s),
    });
  }, saved ?? null);
  await page.goto(`${ORIGIN}/`);
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
  return {
    browser,
    page,
    close: () => (shared ? context.close() : browser.close()),
    requests,
    network,
    blockedByCsp,
    violations,
    send: (m: unknown) => page.evaluate((msg) => window.postMessage(msg, "*"), m),
    posted: () => page.evaluate(() => (window as unknown as { __posted: Record<string, unknown>[] }).__posted),
  };
}

/** The latest message the panel posted whose fields equal `fields` (waits for it). */
export async function waitPosted(page: Page, fields: Record<string, unknown>): Promise<Record<string, unknown>> {
  const handle = await page.waitForFunction((want) => {
    const list = (window as unknown as { __posted: Record<string, unknown>[] }).__posted;
    for (let i = list.length - 1; i >= 0; i--) {
      if (Object.entries(want).every(([k, v]) => list[i][k] === v)) return list[i];
    }
    return null;
  }, fields);
  return (await handle.jsonValue()) as Record<string, unknown>;
}
