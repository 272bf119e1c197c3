/**
 * A permission question asked while the panel is hidden is announced in a notification that
 * names the tool call, and VS Code draws `[label](command:…)` in a notification as a link that
 * runs the command when clicked. The title is the command line the model wrote: one holding
 * `[Show output](command:workbench.action.terminal.kill)` offered the user a link that ran
 * that command (`sendSequence?…` would type into their terminal). The built extension against the real server.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { host, installVscodeModule } from "./editorHost";
import { type makeWorkspace, waitFor } from "./harness";
import { type ActivePanel, scriptedPanel } from "./panelHost";

installVscodeModule();

const LINK = "[Show output](command:workbench.action.terminal.kill)"; // short: titles are cut to a line

describe("a notification that names a tool call", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;

  before(async () => {
    ({ ws, panel } = await scriptedPanel(
      () => [
        { match: "run it", text: "Running.", tool_calls: [{ name: "run_command", input: { command: `echo '${LINK}'` } }] },
        { text: "Done." },
      ],
      {},
      undefined,
      { visible: false },
    ));
  });

  after(async () => {
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  test("shows the model's link syntax as text, never as a link", async () => {
    panel.send({ type: "prompt", text: "run it" });
    const ask = await waitFor(() => panel.ofType("permission")[0], "the question");
    const said = await waitFor(() => host.shown.find((m) => m.includes("waiting for your answer")), "the notification");
    assert.match(String((ask.toolCall as { title: string }).title), /\]\(command:/, "the title no longer holds the link syntax");
    // VS Code links `[label](https:|http:|command:|file:…)`: nothing of the kind is left.
    assert.doesNotMatch(said, /\]\((?:https?:|command:|file:)/i, said);
    assert.match(said, /Show output\]\u200b\(command:workbench\.action\.terminal\.kill\)/);
    panel.send({ type: "permission", requestId: ask.requestId, optionId: "reject_once" });
    await waitFor(() => panel.ofType("turn").some((m) => m.state === "idle" && m.stopReason), "the turn's end");
  });
});
