/**
 * Apply / Discard of the deferred edits listed under the transcript. The card stays until the
 * list is read again, after the server's answer, so a double-click sends the same decision
 * twice; the server removes a proposal at its first `kiln/edit/resolve` whatever the outcome
 * (PROTOCOL.md §5), and a second one would show "no pending edit" under an edit that landed.
 * Each proposal is resolved once: a later click on it is ignored.
 */

import type { KilnProtocol } from "../protocol/client";
import type { HostToWebview } from "../protocol/messages";

export class EditResolutions {
  private readonly sent = new Set<string>();

  /** Resolve `proposalId` unless it was already; false when this click was ignored. */
  async resolve(
    protocol: KilnProtocol,
    proposalId: string,
    decision: "accept" | "reject",
    newText: string | undefined,
    post: (message: HostToWebview) => void,
  ): Promise<boolean> {
    if (this.sent.has(proposalId)) return false;
    this.sent.add(proposalId);
    const done = await protocol.resolveEdit(proposalId, decision, newText);
    if (done.outcome !== "applied" && decision === "accept") {
      post({ type: "error", message: `The edit was not applied (${done.outcome}).` });
    }
    return true;
  }
}
