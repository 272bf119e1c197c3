/**
 * `/compact` holds the session as a turn does (PROTOCOL.md): the panel shows it running and
 * Stop (the panel's, or "Kiln: Stop the Current Turn") cancels it, the conversation left as it
 * was. The panel did not count a compaction as running, so Stop did nothing and the summary
 * went on. The built extension against the real server; the scripted model holds the summary.
 */

import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { host, installVscodeModule } from "./editorHost";
import { type makeWorkspace, waitFor } from "./harness";
import { type ActivePanel, scriptedPanel } from "./panelHost";

installVscodeModule();

const SUMMARY = "<compaction_request>";
// A long first answer makes the conversation worth compacting (over half the 200k window);
// a trigger near the whole window keeps the automatic compaction out of the questions.
const LONG = "word ".repeat(120_000);

describe("Stop during /compact", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let panel: ActivePanel;
  let gate: string;
  let reached: string;

  before(async () => {
    ({ ws, panel } = await scriptedPanel(
      (home) => {
        gate = join(home, "gate");
        reached = join(home, "reached");
        return [
          { match: SUMMARY, wait_for: gate, reached },
          { match: SUMMARY, text: "summary" },
          { match: "one", text: LONG },
          { match: "two", text: "Two answered." },
          { match: "three", text: "Three answered." },
        ];
      },
      {},
      { KILN_PROVIDER: "scripted", KILN_COMPACT_AT: "0.99" },
    ));
  });

  after(async () => {
    if (gate && !existsSync(gate)) writeFileSync(gate, "");
    await panel?.extension.deactivate();
    ws?.cleanup();
  });

  const idle = () => panel.ofType("turn").filter((m) => m.state === "idle").length;
  const infos = () => panel.ofType("info").map((m) => String(m.message));
  const context = async (): Promise<string> => {
    const said = infos().length;
    panel.send({ type: "command", name: "context", args: "" });
    return waitFor(() => infos().slice(said).find((m) => m.startsWith("Context:")), "the context line");
  };

  test("Stop ends the compaction; the session keeps every message and answers on", async () => {
    for (const word of ["one", "two"]) {
      const turns = idle();
      panel.send({ type: "prompt", text: word });
      await waitFor(() => idle() > turns, `turn ${word}`);
    }
    // The panel can show the turn idle a moment before the session counts it: ask again.
    let before = await context();
    for (let i = 0; i < 100 && !/2 turns/.test(before); i++) {
      await new Promise((r) => setTimeout(r, 50));
      before = await context();
    }
    assert.match(before, /2 turns/);
    const turns = idle();
    panel.send({ type: "command", name: "compact", args: "" });
    await waitFor(() => panel.ofType("turn").at(-1)?.state === "running", "the compaction shown running");
    await waitFor(() => existsSync(reached) || undefined, "its summary request held at the gate");
    await host.commands.get("kiln.stop")!();
    await waitFor(() => idle() > turns, "the compaction stopped");
    const said = await waitFor(() => infos().find((m) => /Compaction stopped|Compacted|Nothing to compact/.test(m)), "its outcome");
    assert.equal(said, "Compaction stopped: the conversation is as it was.");
    assert.deepEqual(panel.ofType("error"), []);
    assert.equal(await context(), before, "the stopped compaction changed the session");
    writeFileSync(gate, "");
    const again = idle();
    panel.send({ type: "prompt", text: "three" });
    await waitFor(() => idle() > again, "turn three");
    assert.match(panel.answer(), /Three answered\.$/);
    assert.match(await context(), /3 turns/);
  });
});
