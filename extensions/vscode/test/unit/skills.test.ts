import { beforeEach, describe, expect, test } from "vitest";
import { installWithReview, listSkills, reviewSummary, searchSkills } from "../../src/host/skills";
import { KilnProtocol } from "../../src/protocol/client";
import { Peer } from "../stubs/peer";
import { opened, reset, shown, user } from "../stubs/vscode";

let peer: Peer;
let protocol: KilnProtocol;
const ITEM = { id: "acme/pdf", latestVersion: "1.2.0", description: "Read and fill PDF forms", deprecated: false };

beforeEach(() => {
  reset();
  peer = new Peer()
    .on("kiln/skills/search", () => ({ skills: [ITEM], metadata: { count: 1 } }))
    .on("kiln/skills/install", (p) => ({ id: "acme/pdf", version: "1.2.0", path: "/w/.kiln/skills/pdf", action: p.yes ? "installed" : "?" }));
  protocol = new KilnProtocol(peer);
});

describe("skill commands", () => {
  test("the review summary names the version and the description, and flags deprecation", () => {
    expect(reviewSummary(ITEM)).toMatch(/^acme\/pdf@1\.2\.0\nRead and fill PDF forms\n/);
    expect(reviewSummary({ ...ITEM, deprecated: true })).toContain("deprecated");
  });

  test("search → pick → scope → review → install with the exact version", async () => {
    user.inputs.push("pdf");
    user.picks.push((items) => items[0], (items) => items.find((i) => i.label === "User"));
    user.buttons.push("Install");
    await searchSkills(protocol);
    expect(peer.calls("kiln/skills/search")).toEqual([{ query: "pdf", limit: 20 }]);
    const review = shown.find((s) => s.message.startsWith("Install skill"))!;
    expect(review.message).toBe("Install skill acme/pdf@1.2.0?");
    expect(review.options[0]).toMatchObject({ modal: true, detail: expect.stringContaining("Read and fill PDF forms") });
    expect(peer.calls("kiln/skills/install")).toEqual([{ spec: "acme/pdf@1.2.0", scope: "user", yes: true }]);
    expect(shown.at(-1)?.message).toBe("Kiln: installed acme/pdf@1.2.0.");
  });

  test("declining the review installs nothing", async () => {
    user.picks.push((items) => items[0]);
    user.buttons.push(undefined);
    expect(await installWithReview(protocol, ITEM)).toBe(false);
    expect(peer.calls("kiln/skills/install")).toEqual([]);
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
