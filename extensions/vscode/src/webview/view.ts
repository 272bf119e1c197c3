/**
 * The chat panel's DOM. It owns no state of its own beyond what the user is typing and which
 * tool cards are expanded: every host message goes through the shared schema and the
 * `chatState` reducer, and the panel is redrawn from the result.
 */

import { type ChatState, type Entry, initialState, reduce, usageText } from "../protocol/chatState";
import { parseHostMessage, type WebviewToHost } from "../protocol/messages";
import { Cards } from "./cards";
import { Composer } from "./composer";
import { Answer } from "./answer";

type Post = (message: WebviewToHost) => void;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

const STATUS_ICON: Record<string, string> = {
  pending: "…",
  in_progress: "⟳",
  completed: "✓",
  failed: "✗",
};

/** How many of the latest transcript entries are always laid out (the rest only near the screen). */
const SETTLED = 20;

export class ChatView {
  state: ChatState = initialState();
  private readonly open = new Set<string>();
  /** The reducer replaces only entries that changed, so an unchanged entry keeps its node. */
  private nodes = new WeakMap<Entry, HTMLElement>();
  /** The streaming state of each answer's node: a longer text redraws only its last block. */
  private answers = new WeakMap<Element, Answer>();
  private readonly sessions: HTMLSelectElement;
  private readonly plan: HTMLElement;
  private readonly transcript: HTMLElement;
  private readonly permissions: HTMLElement;
  private readonly pending: HTMLElement;
  private readonly usage: HTMLElement;
  private readonly banner: HTMLElement;
  private readonly welcome: HTMLElement;
  private readonly composer: Composer;
  private readonly cards: Cards;
  private readonly mode: HTMLSelectElement;
  private readonly editMode: HTMLSelectElement;
  private readonly model: HTMLInputElement;
  /** The models `kiln/models/list` offers; the field still takes any other id. */
  private readonly models: HTMLDataListElement;

  constructor(
    root: HTMLElement,
    private readonly post: Post,
    saved?: ChatState,
    private readonly save: (state: ChatState) => void = () => {},
  ) {
    // A restored transcript, but not a running turn or open questions: those belonged to a
    // host that may be gone (a reloaded window). The host says on "ready" which still hold.
    if (saved && Array.isArray(saved.entries)) {
      this.state = { ...initialState(), ...saved, running: false, permissions: [] };
    }
    root.replaceChildren();
    const header = el("div", { class: "header" });
    this.sessions = el("select", { class: "sessions", title: "Session history" });
    const refresh = el("button", { class: "history", title: "Refresh history" }, "History");
    const fresh = el("button", { class: "new", title: "New session" }, "New");
    header.append(this.sessions, refresh, fresh);
    const pickers = el("div", { class: "pickers" });
    this.mode = el("select", { class: "mode", title: "What Kiln may do without asking" });
    for (const m of ["ask", "auto-edit", "ci", "yolo"]) this.mode.append(el("option", { value: m }, `mode: ${m}`));
    this.editMode = el("select", { class: "edit-mode", title: "How edits reach files" });
    for (const m of ["ask", "deferred", "auto"]) this.editMode.append(el("option", { value: m }, `edits: ${m}`));
    this.model = el("input", { class: "model", list: "kiln-models", placeholder: "model (default)", title: "Model for new sessions" });
    this.models = el("datalist", { id: "kiln-models" });
    pickers.append(this.mode, this.editMode, this.model, this.models);
    this.banner = el("div", { class: "banner", hidden: "" });
    this.welcome = el("div", { class: "welcome" });
    this.welcome.append(
      el("h3", {}, "Kiln"),
      el("p", {}, "Ask about this workspace, or have Kiln change it. Edits wait for your review."),
      el(
        "ul",
        {},
      ),
    );
    const tips = this.welcome.querySelector("ul") as HTMLElement;
    for (const tip of [
      "@ mentions a file, folder or symbol (ranked by Kiln's index)",
      "/ runs a command: /clear /compact /mode /model /context, or an installed skill",
      "Ctrl+I (Cmd+I) in an editor edits the selection; Ctrl+Alt+K opens this chat",
      "Enter sends, Shift+Enter starts a new line, Escape stops Kiln",
    ]) {
      tips.append(el("li", {}, tip));
    }
    const openFolder = el("button", { class: "open-folder", hidden: "" }, "Open Folder");
    openFolder.addEventListener("click", () => this.post({ type: "openFolder" }));
    this.banner.after(openFolder);
    this.plan = el("ul", { class: "plan" });
    this.transcript = el("div", { class: "transcript", role: "log", "aria-live": "polite" });
    this.permissions = el("div", { class: "permissions" });
    this.pending = el("div", { class: "pending-edits" });
    this.usage = el("div", { class: "usage" });
    this.cards = new Cards(this.post);
    this.composer = new Composer(
      this.post,
      () => !this.state.running && this.state.server.state === "running",
      () => this.state.running,
    );
    root.append(
      header,
      pickers,
      this.banner,
      openFolder,
      this.welcome,
      this.plan,
      this.transcript,
      this.permissions,
      this.pending,
      this.usage,
      this.composer.form,
    );
    this.openFolder = openFolder;

    fresh.addEventListener("click", () => this.post({ type: "newSession" }));
    refresh.addEventListener("click", () => this.post({ type: "listSessions" }));
    this.sessions.addEventListener("change", () => {
      if (this.sessions.selectedOptions[0]?.classList.contains("older")) {
        this.sessions.value = ""; // the current session stays shown while the page comes
        this.post({ type: "olderSessions" });
      } else if (this.sessions.value) {
        this.post({ type: "loadSession", sessionId: this.sessions.value });
      }
    });
    this.mode.addEventListener("change", () => this.post({ type: "setMode", mode: this.mode.value }));
    this.editMode.addEventListener("change", () => this.post({ type: "setMode", editMode: this.editMode.value }));
    this.model.addEventListener("change", () => this.post({ type: "setModel", model: this.model.value.trim() }));
    this.transcript.addEventListener("click", (e) => this.clicked(e));
    this.transcript.addEventListener("scroll", () => this.scrolled(), { passive: true });
    const user = () => (this.userScrolled = true);
    for (const kind of ["wheel", "touchstart", "pointerdown", "keydown"]) {
      this.transcript.addEventListener(kind, user, { passive: true });
    }
    this.render();
  }

  private readonly openFolder: HTMLElement;
  /** The transcript follows new output until the user scrolls up; back at the bottom, again. */
  private follow = true;
  /** The user touched the scrollbar, wheel or keys since the panel last scrolled itself. */
  private userScrolled = false;
  private scrollQueued = false;
  private lastHeight = 0;

  /**
   * A scroll: the user's (away from the bottom: stop following; back at it: follow again) or the
   * page's own (an entry drawn at its real size moves the view). Layout is read here, once per
   * scroll event, not after every message: that made a long transcript lay out per message.
   */
  private scrolled(): void {
    const t = this.transcript;
    if (t.scrollHeight - t.scrollTop - t.clientHeight < 40) this.follow = true;
    else if (this.userScrolled) this.follow = false;
  }

  /** To the bottom at the next frame (a burst of messages scrolls once), until it holds still. */
  private toBottom(): void {
    if (this.scrollQueued) return;
    this.scrollQueued = true;
    requestAnimationFrame(() => {
      this.scrollQueued = false;
      if (!this.follow) return;
      const t = this.transcript;
      this.userScrolled = false;
      t.scrollTop = t.scrollHeight;
      // Entries come into view at their real size: the bottom moved, follow it once more.
      if (t.scrollHeight !== this.lastHeight) {
        this.lastHeight = t.scrollHeight;
        this.toBottom();
      }
    });
  }

  /** File links and code-block buttons in answers (rendered as HTML, so handled here). */
  private clicked(e: Event): void {
    const target = e.target as HTMLElement | null;
    const link = target?.closest("a.file-link") as HTMLElement | null;
    if (link) {
      e.preventDefault();
      const line = Number(link.dataset.line);
      this.post({ type: "openFile", path: link.dataset.path ?? "", ...(line > 0 ? { line } : {}) });
      return;
    }
    const button = target?.closest("button.code-action") as HTMLElement | null;
    const block = button?.closest(".code-block") as HTMLElement | null;
    if (button && block) {
      const action = button.dataset.action as "copy" | "insert" | "apply";
      const code = block.querySelector("code")?.textContent ?? "";
      this.post({ type: "codeAction", action, code, lang: block.dataset.lang ?? "", target: block.dataset.target ?? "" });
    }
  }

  /** Focus the question box, unless the user is already in another control of the panel. */
  focusInput(): void {
    const active = document.activeElement;
    if (!active || active === document.body || active === document.documentElement) this.composer.input.focus();
  }

  /** A raw message from the host; invalid ones are shown, not dropped silently. */
  receive(raw: unknown): void {
    const parsed = parseHostMessage(raw);
    if (parsed.ok && parsed.message.type === "completions") {
      this.composer.completions(parsed.message.id, parsed.message.items);
      return;
    }
    if (parsed.ok && parsed.message.type === "addContext") {
      this.composer.add(parsed.message.item);
      this.composer.input.focus();
      return;
    }
    if (parsed.ok && parsed.message.type === "draft") {
      this.composer.restore(parsed.message.text, parsed.message.context);
      this.composer.input.focus();
      return;
    }
    if (!parsed.ok) {
      this.state = reduce(this.state, {
        type: "error",
        message: `Kiln panel got a malformed message: ${parsed.error}`,
      });
    } else {
      this.state = reduce(this.state, parsed.message);
    }
    this.render();
    this.save(this.state);
  }

  private render(): void {
    const s = this.state;
    this.composer.send.disabled = s.running || s.server.state !== "running";
    this.composer.stop.disabled = !s.running;
    this.banner.hidden = s.server.state === "running";
    this.banner.textContent =
      s.server.state === "running"
        ? ""
        : s.server.state === "no-folder"
          ? "Open a folder to use Kiln: it indexes and edits the folder you open."
          : `Kiln server ${s.server.state}${s.server.message ? `: ${s.server.message}` : ""}`;
    this.openFolder.hidden = s.server.state !== "no-folder";
    this.welcome.hidden = s.entries.length > 0;
    this.mode.value = s.config.mode;
    this.editMode.value = s.config.editMode;
    if (document.activeElement !== this.model) this.model.value = s.config.model;
    if (this.models.children.length !== s.models.ids.length) {
      this.models.replaceChildren(...s.models.ids.map((id) => el("option", { value: id })));
    }
    this.model.title = s.models.note ? `Model for new sessions (${s.models.note})` : "Model for new sessions";

    this.sessions.replaceChildren(
      el("option", { value: "" }, s.sessionId ? this.title(s) : "No session"),
      // A session is titled by its first question: one without a title was never asked
      // anything (New, /clear, a model change), so there is nothing in it to go back to.
      ...s.sessions
        .filter((x) => x.sessionId !== s.sessionId && x.title)
        .map((x) => el("option", { value: x.sessionId }, x.title)),
      // The server lists sessions in pages of 50: the older ones are one pick away.
      ...(s.moreSessions ? [el("option", { value: "", class: "older" }, "Load older sessions…")] : []),
    );

    this.plan.replaceChildren(
      ...s.plan.map((p) =>
        el("li", { class: `plan-entry ${p.status}` }, `${STATUS_ICON[p.status] ?? "•"} ${p.content}`),
      ),
    );
    this.plan.hidden = s.plan.length === 0;

    this.syncTranscript(s.entries);
    if (this.follow) this.toBottom();

    // Kept by request / proposal: a redraw leaves the user's unticked hunks unticked.
    this.cards.show(this.permissions, s.permissions.map((p) => this.cards.permission(p)));
    this.cards.show(this.pending, s.pendingEdits.map((e) => this.cards.pendingEdit(e)));
    this.cards.forget(s);

    this.usage.textContent = s.usage ? usageText(s.usage) : "";
  }

  /** The current session's name: as the history lists it (the server names a session after its
   *  first question), else as the host announced it. */
  private title(s: ChatState): string {
    const listed = s.sessions.find((x) => x.sessionId === s.sessionId)?.title;
    return listed || s.title || "Current session";
  }

  /** Touch only the nodes that changed: streaming changes the last entry, not the history. */
  private syncTranscript(entries: Entry[]): void {
    const children = this.transcript.children;
    for (let i = 0; i < entries.length; i++) {
      const current = children[i];
      const node = this.grow(entries[i], current) ?? this.node(entries[i]);
      if (current === node) continue;
      if (current) this.transcript.replaceChild(node, current);
      else this.transcript.appendChild(node);
    }
    while (children.length > entries.length) children[children.length - 1].remove();
    // Entries well above the latest ones no longer change: the page may skip them off screen.
    for (let i = Math.max(children.length - SETTLED, 0) - 1; i >= 0 && !children[i].classList.contains("settled"); i--) {
      children[i].classList.add("settled");
    }
  }

  /** `current`, updated in place, when `e` is the answer it shows with more text. */
  private grow(e: Entry, current: Element | undefined): HTMLElement | undefined {
    if (e.kind !== "agent" || !current || this.nodes.has(e)) return undefined;
    const answer = this.answers.get(current);
    if (!answer || !e.text.startsWith(answer.text)) return undefined;
    answer.update(e.text);
    this.nodes.set(e, answer.node);
    return answer.node;
  }

  private node(e: Entry): HTMLElement {
    let node = this.nodes.get(e);
    if (!node) {
      node = this.entry(e);
      this.nodes.set(e, node);
    }
    return node;
  }

  private entry(e: Entry): HTMLElement {
    switch (e.kind) {
      case "user": {
        const node = el("div", { class: "message user" });
        node.append(el("div", { class: "text" }, e.text));
        for (const r of e.references) node.append(el("span", { class: "reference", title: r.uri }, r.label));
        return node;
      }
      case "agent": {
        const answer = new Answer("message agent");
        answer.update(e.text);
        this.answers.set(answer.node, answer);
        return answer.node;
      }
      case "thought": {
        // Labelled, and its lines kept: thinking is often a numbered plan, not one paragraph.
        const node = el("div", { class: "message thought" });
        node.append(el("div", { class: "thought-label" }, "Thinking"), el("div", { class: "text" }, e.text));
        return node;
      }
      case "notice":
        return el("div", { class: `notice ${e.level}` }, e.text);
      case "tool": {
        const card = el("details", { class: `tool ${e.status}`, "data-tool": e.id });
        if (this.open.has(e.id)) card.open = true;
        card.addEventListener("toggle", () => {
          if (card.open) this.open.add(e.id);
          else this.open.delete(e.id);
        });
        const summary = el("summary");
        summary.append(
          el("span", { class: "status", title: e.status }, STATUS_ICON[e.status] ?? e.status),
          el("span", { class: "title" }, ` ${e.title}`),
        );
        card.append(summary);
        for (const loc of e.locations) {
          const a = el("a", { class: "location", href: "#" }, loc.line ? `${loc.path}:${loc.line}` : loc.path);
          a.addEventListener("click", (ev) => {
            ev.preventDefault();
            this.post({ type: "openLocation", path: loc.path, ...(loc.line ? { line: loc.line } : {}) });
          });
          card.append(a);
        }
        if (e.diffs.length) {
          const b = el("button", { class: "show-diff" }, "Show diff");
          b.addEventListener("click", () => this.post({ type: "openDiff", toolCallId: e.id }));
          card.append(b);
        }
        if (e.output) card.append(el("pre", { class: "output" }, e.output));
        return card;
      }
    }
  }
}
