/** Webview entry: connects the chat view to the host through `acquireVsCodeApi`. */

import type { WebviewToHost } from "../protocol/messages";
import { ChatView } from "./view";

declare function acquireVsCodeApi(): { postMessage(message: unknown): void };

const api = acquireVsCodeApi();
const root = document.getElementById("kiln-root") ?? document.body;
const view = new ChatView(root, (message: WebviewToHost) => api.postMessage(message));
window.addEventListener("message", (event: MessageEvent) => view.receive(event.data));
api.postMessage({ type: "ready" } satisfies WebviewToHost);
