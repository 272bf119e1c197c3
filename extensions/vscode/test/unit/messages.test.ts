import { describe, expect, test } from "vitest";
import { hostToWebview, parseHostMessage, parseWebviewMessage, webviewToHost } from "../../src/protocol/messages";
import { HOST_EXAMPLES, WEBVIEW_EXAMPLES } from "../examples";

describe("the host↔webview schema", () => {
  test("every message kind has a valid example", () => {
    const hostKinds = hostToWebview.options.map((o) => o.shape.type.value).sort();
    const webKinds = webviewToHost.options.map((o) => o.shape.type.value).sort();
    expect([...new Set(HOST_EXAMPLES.map((m) => m.type))].sort()).toEqual(hostKinds);
    expect([...new Set(WEBVIEW_EXAMPLES.map((m) => m.type))].sort()).toEqual(webKinds);
    for (const m of HOST_EXAMPLES) expect(parseHostMessage(m)).toMatchObject({ ok: true });
    for (const m of WEBVIEW_EXAMPLES) expect(parseWebviewMessage(m)).toMatchObject({ ok: true });
  });

  test("malformed messages are refused with the offending field named", () => {
    expect(parseWebviewMessage({ type: "prompt", text: "" })).toMatchObject({ ok: false, error: expect.stringContaining("text") });
    expect(parseWebviewMessage({ type: "permission", requestId: "p1" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("optionId"),
    });
    expect(parseWebviewMessage({ type: "shutdown" })).toMatchObject({ ok: false });
    expect(parseHostMessage({ type: "update", sessionId: "s", update: {} })).toMatchObject({
      ok: false,
      error: expect.stringContaining("update.sessionUpdate"),
    });
    expect(parseHostMessage("not an object")).toMatchObject({ ok: false });
    expect(parseHostMessage({ type: "turn", state: "paused" })).toMatchObject({ ok: false });
  });

  test("extra fields of server shapes survive validation", () => {
    const parsed = parseHostMessage({
      type: "update",
      sessionId: "s",
      update: { sessionUpdate: "tool_call", toolCallId: "t", _meta: { tool: "grep" } },
    });
    expect(parsed.ok && parsed.message.type === "update" && parsed.message.update._meta).toEqual({ tool: "grep" });
  });
});
