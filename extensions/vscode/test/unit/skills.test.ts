import { beforeEach, describe, expect, test } from "vitest";
import { installWithReview, listSkills, reviewSummary, searchSkills } from "../../src/host/skills";
import { KilnProtocol } from "../../src/protocol/client";
import { Peer } from "../stubs/peer";
import { opened, reset, shown, user } from "../stubs/vscode";

let peer: Peer;
let protocol: KilnProtocol;
const REVIEW = {
  id: "acme/pdf",
  version: "1.2.0",
  description: "Read and fill PDF forms",
  files: [{ path: "SKILL.md", size: 900 }, { path: "scripts/fill.py", size: 2100 }],
  scripts: ["scripts/fill.py"],
  allowedTools: ["run_command"],
  findings: [{ rule: "network", message: "fetches a URL" }],
  status: "active",
  sizeBytes: 3000,
  tokens: { skillMd: 225, total: 750 },
};
const ITEM = { id: "acme/pdf", latestVersion: "1.2.0", description: "Read and fill PDF forms", deprecated: false };

beforeEach(() => {
  reset();
  peer = new Peer()
    .on("kiln/skills/search", () => ({ skills: [ITEM], metadata: { count: 1 } }))
    .on("kiln/skills/install", (p) => {
      if (!p.yes) throw { code: -31004, message: "install of acme/pdf@1.2.0 was not confirmed", data: { hint: "show the review", review: REVIEW } };
      return { id: "acme/pdf", version: "1.2.0", path: "/w/.kiln/skills/pdf", action: "installed" };
    });
  protocol = new KilnProtocol(peer);
});

describe("skill commands", () => {
  test("the review summary lists files, scripts, pre-approved tools and findings", () => {
    const text = reviewSummary(ITEM, REVIEW);
    expect(text.split("\n")).toEqual([
      "acme/pdf@1.2.0",
      "Read and fill PDF forms",
      "",
      "Files (2, 2.9 KB): SKILL.md, scripts/fill.py",
      "⚠ Scripts: scripts/fill.py",
      "Pre-approved tools: run_command",
      "⚠ Scanner findings: fetches a URL",
      "Context cost: ~225 tokens when loaded (~750 with all files)",
    ]);
    expect(reviewSummary({ ...ITEM, deprecated: true })).toContain("deprecated");
  });

  test("search → pick → scope → the server's review → install with yes", async () => {
    user.inputs.push("pdf");
    user.picks.push((items) => items[0], (items) => items.find((i) => i.label === "User"));
    user.buttons.push("Install");
    await searchSkills(protocol);
    expect(peer.calls("kiln/skills/search")).toEqual([{ query: "pdf", limit: 20 }]);
    const review = shown.find((s) => s.message.startsWith("Install skill"))!;
    expect(review.message).toBe("Install skill acme/pdf@1.2.0?");
    expect(review.options[0]).toMatchObject({ modal: true, detail: expect.stringContaining("⚠ Scripts: scripts/fill.py") });
    expect(peer.calls("kiln/skills/install")).toEqual([
      { spec: "acme/pdf@1.2.0", scope: "user" },
      { spec: "acme/pdf@1.2.0", scope: "user", yes: true },
    ]);
    expect(shown.at(-1)?.message).toBe("Kiln: installed acme/pdf@1.2.0.");
  });

  test("declining the review installs nothing", async () => {
    user.picks.push((items) => items[0]);
    user.buttons.push(undefined);
    expect(await installWithReview(protocol, ITEM)).toBe(false);
    expect(peer.calls("kiln/skills/install").filter((p) => p.yes)).toEqual([]);
  });

  test("an install that needs no review (pinned) is done at once", async () => {
    peer.on("kiln/skills/install", () => ({ id: "acme/pdf", version: "1.2.0", path: "/p", action: "unchanged" }));
    user.picks.push((items) => items[0]);
    expect(await installWithReview(protocol, ITEM)).toBe(true);
    expect(shown.map((s) => s.message)).toEqual(["Kiln: unchanged acme/pdf@1.2.0."]);
  });

  test("a registry error is shown with its hint", async () => {
    peer.on("kiln/skills/search", () => {
      throw { code: -31000, message: "registry unreachable", data: { hint: "set KILN_REGISTRY" } };
    });
    user.inputs.push("pdf");
    await searchSkills(protocol);
    expect(shown.at(-1)).toMatchObject({ kind: "error", message: "registry unreachable — set KILN_REGISTRY" });
  });

  test("list opens the picked skill's SKILL.md", async () => {
    peer.on("kiln/skills/list", () => ({
      skills: [{ name: "pdf", description: "PDF forms", path: "/w/.kiln/skills/pdf", scope: "project", thirdParty: true }],
      warnings: [],
    }));
    user.picks.push((items) => items[0]);
    await listSkills(protocol);
    expect(opened[0].uri.path).toBe("/w/.kiln/skills/pdf/SKILL.md");
  });
});
