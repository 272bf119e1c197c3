/** Webview entry: connects the chat view to the host through `acquireVsCodeApi`. */

import type { ChatState } from "../protocol/chatState";
import type { WebviewToHost } from "../protocol/messages";
import { ChatView } from "./view";

declare function acquireVsCodeApi(): {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
};

const api = acquireVsCodeApi();
const root = document.getElementById("kiln-root") ?? document.body;
// The transcript survives the view being closed and reopened (VS Code keeps webview state).
let pending: ReturnType<typeof setTimeout> | undefined;
const view = new ChatView(
  root,
  (message: WebviewToHost) => api.postMessage(message),
  api.getState() as ChatState | undefined,
  (state) => {
    if (pending) clearTimeout(pending);
    pending = setTimeout(() => api.setState(state), 200);
  },
);
window.addEventListener("message", (event: MessageEvent) => view.receive(event.data));
// The panel gets the keyboard (Ctrl+Alt+K, a click on its tab): typing goes to the question.
window.addEventListener("focus", () => view.focusInput());
api.postMessage({ type: "ready", sessionId: view.state.sessionId } satisfies WebviewToHost);
