/**
 * The composer: the question being typed, its context pills, and the `@` / `/` menus.
 *
 * Typing `@word` (anywhere) or `/word` (at the start) asks the host for completions, which it
 * gets from the server (`kiln/complete/mentions`, ranked by Kiln's index; `kiln/complete/
 * commands`, built-ins and installed skills). Arrow keys move, Enter or Tab takes an item,
 * Escape closes. A chosen mention becomes a pill; pills go with the next question and are
 * cleared once it is sent.
 */

import type { Completion, ContextItem, WebviewToHost } from "../protocol/messages";

type Post = (message: WebviewToHost) => void;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The `@word` or leading `/word` that ends at `caret`, if any. */
export function triggerAt(text: string, caret: number): { trigger: "@" | "/"; start: number; query: string } | null {
  const before = text.slice(0, caret);
  // Any file name: `@café.py`, `@[id].tsx`, `@a+b.py`, `@icon@2x.png` (a space ends the word).
  const at = /(^|\s)@(\S*)$/.exec(before);
  if (at) return { trigger: "@", start: caret - at[2].length - 1, query: at[2] };
  const slash = /^\/([\w.-]*)$/.exec(before);
  if (slash) return { trigger: "/", start: 0, query: slash[1] };
  return null;
}

export class Composer {
  readonly form: HTMLFormElement;
  readonly input: HTMLTextAreaElement;
  readonly send: HTMLButtonElement;
  readonly stop: HTMLButtonElement;
  private readonly pills: HTMLElement;
  private readonly menu: HTMLElement;
  private context: ContextItem[] = [];
  private items: Completion[] = [];
  private selected = 0;
  private requestId = 0;
  private open: { trigger: "@" | "/"; start: number; query: string } | null = null;

  constructor(
    private readonly post: Post,
    private readonly canSend: () => boolean,
    private readonly running: () => boolean = () => false,
  ) {
    this.form = el("form", "composer");
    this.pills = el("div", "pills");
    this.menu = el("ul", "completion-menu");
    this.menu.setAttribute("role", "listbox");
    this.menu.hidden = true;
    this.input = el("textarea", "input");
    this.input.rows = 3;
    this.input.placeholder = "Ask Kiln… (@ to mention a file or symbol, / for commands, Escape stops)";
    this.send = el("button", "send", "Send");
    this.send.type = "submit";
    this.stop = el("button", "stop", "Stop");
    this.stop.type = "button";
    const row = el("div", "composer-row");
    row.append(this.input, this.send, this.stop);
    this.form.append(this.menu, this.pills, row);

    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.submit();
    });
    this.input.addEventListener("keydown", (e) => this.keydown(e));
    this.input.addEventListener("input", () => this.changed());
    this.stop.addEventListener("click", () => this.post({ type: "cancel" }));
    this.renderPills();
  }

  private keydown(e: KeyboardEvent): void {
    // An input method (Japanese, Chinese, Korean…) is composing: its Enter confirms the
    // candidate and Escape cancels it; neither is ours.
    if (e.isComposing || e.keyCode === 229) return;
    if (!this.menu.hidden && this.items.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const n = this.items.length;
        this.selected = (this.selected + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
        this.renderMenu();
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        this.choose(this.items[this.selected]);
        return;
      }
      if (e.key === "Escape") {
        e.preventDefault();
        this.close();
        return;
      }
    }
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      this.submit();
    } else if (e.key === "Escape" && this.running()) {
      e.preventDefault();
      this.post({ type: "cancel" }); // as in a terminal agent: Escape stops the turn
    }
  }

  private changed(): void {
    const found = triggerAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    this.open = found;
    if (!found) return this.close();
    this.requestId += 1;
    this.post({ type: "complete", id: this.requestId, trigger: found.trigger, query: found.query });
  }

  /** The host's answer; a late answer for an older word is dropped. */
  completions(id: number, items: Completion[]): void {
    if (id !== this.requestId || !this.open) return;
    this.items = items;
    this.selected = 0;
    this.renderMenu();
  }

  private renderMenu(): void {
    this.menu.replaceChildren(
      ...this.items.map((item, i) => {
        const li = el("li", `completion ${item.kind}${i === this.selected ? " selected" : ""}`);
        li.setAttribute("role", "option");
        li.append(el("span", "completion-label", item.label));
        if (item.detail) li.append(el("span", "completion-detail", item.detail));
        li.addEventListener("mousedown", (e) => {
          e.preventDefault();
          this.choose(item);
        });
        return li;
      }),
    );
    this.menu.hidden = this.items.length === 0;
  }

  private close(): void {
    this.items = [];
    this.menu.hidden = true;
    this.menu.replaceChildren();
  }

  private choose(item: Completion): void {
    const found = this.open;
    if (!found) return this.close();
    const value = this.input.value;
    const caret = this.input.selectionStart ?? value.length;
    this.input.value = value.slice(0, found.start) + item.insert + value.slice(caret);
    const at = found.start + item.insert.length;
    this.input.setSelectionRange(at, at);
    if (item.context) this.add(item.context);
    this.open = null;
    this.close();
    this.input.focus();
  }

  /** A question handed back unasked (Stop): its text goes before what is typed meanwhile. */
  restore(text: string, context: ContextItem[]): void {
    const typed = this.input.value.trim();
    this.input.value = typed ? `${text}\n\n${typed}` : text;
    for (const item of context) this.add(item);
  }

  add(item: ContextItem): void {
    if (!this.context.some((c) => c.label === item.label)) this.context.push(item);
    this.renderPills();
  }

  private renderPills(): void {
    this.pills.replaceChildren(
      ...this.context.map((c) => {
        const pill = el("span", "pill", c.label);
        pill.title = c.uri;
        const remove = el("button", "pill-remove", "×");
        remove.type = "button";
        remove.title = `Remove ${c.label}`;
        remove.addEventListener("click", () => {
          this.context = this.context.filter((x) => x !== c);
          this.renderPills();
        });
        pill.append(remove);
        return pill;
      }),
    );
    this.pills.hidden = this.context.length === 0;
  }

  private submit(): void {
    const text = this.input.value.trim();
    if (!text || !this.canSend()) return;
    const context = this.context.length ? { context: this.context } : {};
    // `/name args`; a line that starts with a path (`/etc/hosts: why…`) is a question.
    const command = /^\/([\w.-]+)(?:\s+([\s\S]*))?$/.exec(text);
    if (command) this.post({ type: "command", name: command[1], args: (command[2] ?? "").trim(), ...context });
    else this.post({ type: "prompt", text, ...context });
    this.input.value = "";
    this.context = [];
    this.renderPills();
    this.close();
  }
}
