/**
 * The panel's session history against the real server with more stored sessions than one page
 * of `kiln/session/list` (50): the newest page is listed with "Load older sessions…", which
 * brings the next page, so the oldest session can be found and loaded from the panel.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { installVscodeModule } from "./editorHost";
import { type makeWorkspace, storeSessions, waitFor } from "./harness";
import { type ActivePanel, scriptedPanel } from "./panelHost";

installVscodeModule();

interface Listed {
  sessions: { sessionId: string; title: string }[];
  more?: boolean;
}

let ws: ReturnType<typeof makeWorkspace>;
let panel: ActivePanel;

before(async () => {
  ({ ws, panel } = await scriptedPanel(() => [{ match: "oldest", text: "The first answer." }]));
});

after(async () => {
  await panel?.extension.deactivate();
  ws?.cleanup();
});

test("with 61 stored sessions the oldest is one 'Load older sessions…' away, and loads", async () => {
  const turns = () => panel.ofType("turn").length;
  panel.send({ type: "prompt", text: "the oldest question" });
  await waitFor(() => turns() >= 2 && panel.ofType("turn").at(-1)?.state === "idle", "the first turn");
  const oldest = panel.ofType("session").at(-1)!.sessionId as string;
  const newer = await storeSessions(ws.home, ws.root, 60);

  const lists = () => panel.ofType("sessions") as unknown as Listed[];
  const seen = lists().length;
  panel.send({ type: "listSessions" }); // History
  const first = await waitFor(() => lists().length > seen && lists().at(-1), "the history");
  assert.equal(first.sessions.length, 50);
  assert.equal(first.more, true, "older sessions follow");
  assert.equal(first.sessions[0].sessionId, newer.at(-1), "newest first");
  assert.ok(!first.sessions.some((s) => s.sessionId === oldest), "the oldest is not on the first page");

  panel.send({ type: "olderSessions" }); // the picker's "Load older sessions…"
  const all = await waitFor(() => lists().length > seen + 1 && lists().at(-1), "the older page");
  assert.equal(all.sessions.length, 61);
  assert.equal(new Set(all.sessions.map((s) => s.sessionId)).size, 61, "each session once");
  assert.equal(all.more, false, "nothing older");
  assert.deepEqual(all.sessions.at(-1), { ...all.sessions.at(-1), sessionId: oldest, title: "the oldest question" });

  const chunks = panel.ofType("update").length;
  panel.send({ type: "loadSession", sessionId: oldest });
  await waitFor(
    () =>
      panel
        .ofType("update")
        .slice(chunks)
        .some((m) => JSON.stringify(m).includes("The first answer.")),
    "the oldest session's replay",
  );
  // Loading refreshes the history: it keeps the older page the user opened.
  const again = await waitFor(() => lists().length > seen + 2 && lists().at(-1), "the history after the load");
  assert.equal(again.sessions.length, 61);
  assert.ok(again.sessions.some((s) => s.sessionId === oldest));
  assert.equal(panel.ofType("error").length, 0, JSON.stringify(panel.ofType("error")));
});
