/**
 * The server's permission questions while they wait for the user's click in the panel.
 *
 * Each question gets a panel id; it ends when the user answers, when the server gives up first
 * (`$/cancelRequest`, a timeout on its side) or when the server goes away — the panel is told
 * in every case, so no stale question stays on screen.
 */

import { CANCELLED, type CancellationTokenLike } from "../protocol/client";
import type { HostToWebview } from "../protocol/messages";
import type { PermissionRequest, PermissionResponse } from "../protocol/types";

export class PermissionQuestions {
  private counter = 0;
  private readonly waiting = new Map<string, (answer: PermissionResponse) => void>();
  /** The panel message of each open question, to show it again in a reopened panel. */
  private readonly shown = new Map<string, HostToWebview>();

  constructor(private readonly post: (message: HostToWebview) => void) {}

  /** Show the question in the panel; resolves with the user's answer, or CANCELLED. */
  ask(request: PermissionRequest, token: CancellationTokenLike): Promise<PermissionResponse> {
    const requestId = `p${++this.counter}`;
    return new Promise<PermissionResponse>((resolve) => {
      const sub = token.onCancellationRequested(() => {
        this.shown.delete(requestId);
        if (this.waiting.delete(requestId)) {
          this.post({ type: "permissionClosed", requestId, reason: "cancelled" });
          resolve(CANCELLED);
        }
        sub.dispose();
      });
      this.waiting.set(requestId, (answer) => {
        sub.dispose();
        resolve(answer);
      });
      const message: HostToWebview = {
        type: "permission",
        requestId,
        sessionId: request.sessionId,
        toolCall: { ...request.toolCall },
        options: request.options,
      };
      this.shown.set(requestId, message);
      this.post(message);
    });
  }

  /** The user's click; an id that is no longer waiting is ignored. */
  answer(requestId: string, answer: PermissionResponse): void {
    const resolve = this.waiting.get(requestId);
    if (!resolve) return;
    this.waiting.delete(requestId);
    this.shown.delete(requestId);
    resolve(answer);
    this.post({ type: "permissionClosed", requestId, reason: "answered" });
  }

  /** The server went away: every open question is cancelled and withdrawn from the panel. */
  cancelAll(): void {
    for (const [requestId, resolve] of this.waiting) {
      resolve(CANCELLED);
      this.post({ type: "permissionClosed", requestId, reason: "cancelled" });
    }
    this.waiting.clear();
    this.shown.clear();
  }

  /** Show every open question again (a panel that was reloaded lost them). */
  repost(): void {
    for (const message of this.shown.values()) this.post(message);
  }

  get size(): number {
    return this.waiting.size;
  }
}
