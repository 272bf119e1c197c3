import { beforeEach, describe, expect, test } from "vitest";
import { IndexStatusBar, statusText } from "../../src/host/statusBar";
import type { IndexStatus } from "../../src/protocol/types";
import { reset, statusItems } from "../stubs/vscode";

beforeEach(reset);

describe("index status in the status bar", () => {
  test("texts for each state", () => {
    expect(statusText(null, "failed").text).toBe("$(circle-slash) Kiln: failed");
    expect(statusText({ state: "indexing", progress: { done: 30, total: 120 } }, "running").text).toBe(
      "$(sync~spin) Kiln: indexing 25%",
    );
    expect(statusText({ state: "indexing", progress: { done: 0, total: 0 } }, "running").text).toBe(
      "$(sync~spin) Kiln: indexing…",
    );
    const ready = statusText({ state: "ready", files: 42, blocks: 300, watching: true }, "running");
    expect(ready).toEqual({ text: "$(database) Kiln: 42 files", tooltip: "Index ready: 42 files, 300 blocks, watching" });
    expect(statusText({ state: "unavailable", error: "no grammar" }, "running").tooltip).toBe("Index error: no grammar");
  });

  test("polls the server while running and stops when it stops", async () => {
    const answers: IndexStatus[] = [{ state: "ready", files: 3, blocks: 9 }];
    let calls = 0;
    const bar = new IndexStatusBar(() => {
      calls++;
      return Promise.resolve(answers[0]);
    });
    expect(statusItems[0].visible).toBe(true);
    expect(statusItems[0].command).toBe("kiln.showIndexStatus");
    bar.setServer("running");
    await bar.poll();
    expect(statusItems[0].text).toBe("$(database) Kiln: 3 files");
    expect(calls).toBe(2);
    bar.setServer("stopped");
    expect(statusItems[0].text).toBe("$(circle-slash) Kiln: stopped");
    bar.dispose();
    expect(statusItems[0].disposed).toBe(true);
  });
});
