/**
 * The panel's model picker offers what the server's `kiln/models/list` answers (the configured
 * model, then the provider's or the OpenAI-compatible server's models). A server without the
 * method, or without a provider, leaves the picker a free-text field, as before.
 */

import type { HostToWebview } from "../protocol/messages";
import type { ModelList } from "../protocol/types";

export async function postModels(
  protocol: { listModels(): Promise<ModelList> },
  post: (message: HostToWebview) => void,
): Promise<void> {
  try {
    const listed = await protocol.listModels();
    post({ type: "models", ids: listed.models.map((m) => m.id), ...(listed.note ? { note: listed.note } : {}) });
  } catch {
    // No list: the field still takes any model id typed into it.
  }
}
