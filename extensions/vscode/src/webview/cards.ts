/**
 * The cards under the transcript that wait for the user: permission questions and pending
 * (deferred) edits, each with its per-hunk review. A card is built once per question or
 * proposal and kept across redraws, so the hunks the user unticked stay unticked (and the
 * answer leaves them out) however many messages arrive while they review.
 */

import type { ChatState, PermissionPrompt } from "../protocol/chatState";
import type { WebviewToHost } from "../protocol/messages";
import { hunkReview } from "./hunkReview";

type Post = (message: WebviewToHost) => void;
type PendingEdit = ChatState["pendingEdits"][number];

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

const EXTERNAL =
  "⚠ Asked while Kiln was acting on external content (web page, command output, third-party skill). Check it carefully.";

export class Cards {
  private permissions = new Map<string, HTMLElement>();
  private edits = new Map<string, HTMLElement>();

  constructor(private readonly post: Post) {}

  /** `parent` showing exactly `nodes`, in order; nodes already in place are not touched. */
  show(parent: HTMLElement, nodes: HTMLElement[]): void {
    const children = Array.from(parent.children);
    if (children.length === nodes.length && children.every((c, i) => c === nodes[i])) return;
    parent.replaceChildren(...nodes);
  }

  /** Drop the cards of questions and proposals that are gone. */
  forget(s: ChatState): void {
    const asked = new Set(s.permissions.map((p) => p.requestId));
    for (const id of this.permissions.keys()) if (!asked.has(id)) this.permissions.delete(id);
    const pending = new Set(s.pendingEdits.map(editKey));
    for (const key of this.edits.keys()) if (!pending.has(key)) this.edits.delete(key);
  }

  permission(p: PermissionPrompt): HTMLElement {
    let box = this.permissions.get(p.requestId);
    if (box) return box;
    box = el("div", { class: "permission", "data-request": p.requestId });
    box.append(el("div", { class: "permission-title" }, `Allow ${p.title}?`));
    if (p.fromExternal) box.append(el("div", { class: "permission-external" }, EXTERNAL));
    if (p.reason) box.append(el("div", { class: "permission-reason" }, p.reason));
    // The title is cut to a line; this is the whole of what a yes approves (scrolls when long).
    if (p.detail) box.append(el("pre", { class: "permission-detail" }, p.detail));
    if (p.hasDiff) {
      const diff = el("button", { class: "show-diff" }, "Show diff");
      diff.addEventListener("click", () => this.post({ type: "openDiff", toolCallId: p.toolCallId }));
      box.append(diff);
    }
    // Per-hunk review: every hunk is kept unless unticked; an allow answer then carries the
    // file with only the ticked hunks (one file per edit question).
    const reviews = p.diffs.map((d) => hunkReview(d, p.diffs.length === 1));
    box.append(...reviews.map((r) => r.node));
    for (const o of p.options) {
      const b = el("button", { class: `option ${o.kind}`, "data-option": o.optionId }, o.name);
      b.addEventListener("click", () => {
        const newText = reviews.length === 1 && o.kind.startsWith("allow") ? reviews[0].kept() : undefined;
        this.post({
          type: "permission",
          requestId: p.requestId,
          optionId: o.optionId,
          ...(newText !== undefined ? { newText } : {}),
        });
      });
      box.append(b);
    }
    this.permissions.set(p.requestId, box);
    return box;
  }

  pendingEdit(e: PendingEdit): HTMLElement {
    const key = editKey(e);
    let row = this.edits.get(key);
    if (row) return row;
    row = el("div", { class: "pending-edit", "data-proposal": e.proposalId });
    row.append(el("span", { class: "path" }, `Pending edit: ${e.path}`));
    const diff = el("button", { class: "show-diff" }, "Diff");
    diff.addEventListener("click", () => this.post({ type: "openDiff", toolCallId: e.toolCallId }));
    // Per-hunk review of a deferred edit: Apply sends only the ticked hunks.
    const review =
      e.newText !== undefined ? hunkReview({ path: e.path, oldText: e.oldText ?? "", newText: e.newText }, true) : undefined;
    const apply = el("button", { class: "apply" }, "Apply");
    apply.addEventListener("click", () => {
      const newText = review?.kept();
      this.post({ type: "resolveEdit", proposalId: e.proposalId, decision: "accept", ...(newText !== undefined ? { newText } : {}) });
    });
    const discard = el("button", { class: "discard reject_once" }, "Discard");
    discard.addEventListener("click", () => this.post({ type: "resolveEdit", proposalId: e.proposalId, decision: "reject" }));
    row.append(diff, apply, discard);
    if (review) row.append(review.node);
    this.edits.set(key, row);
    return row;
  }
}

const keys = new WeakMap<PendingEdit, string>();

/** A proposal listed again with the same texts keeps its card (and its ticks). */
function editKey(e: PendingEdit): string {
  let key = keys.get(e);
  if (key === undefined) {
    key = JSON.stringify([e.proposalId, e.path, e.oldText ?? null, e.newText ?? null]);
    keys.set(e, key);
  }
  return key;
}
