/**
 * Markdown for agent answers. Raw HTML in the model's text is escaped, never rendered: the
 * answer may quote files or web pages, and the webview must not run what they contain.
 */

import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

export function renderMarkdown(text: string): string {
  return md.render(text);
}
