/**
 * Skill commands' server calls against real processes: `kiln registry serve` on loopback with
 * one published skill, and `kiln lsp` pointed at it with KILN_REGISTRY.
 */

import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KilnRpcError } from "../../src/protocol/client";
import { kilnCli, makeWorkspace, type Running, startKiln, startRegistry } from "./harness";

describe("skills through kiln lsp and a real registry", () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let registry: Awaited<ReturnType<typeof startRegistry>>;
  let kiln: Running;

  before(async () => {
    ws = makeWorkspace({ "README.md": "# demo\n" });
    const data = join(ws.home, "..", "registry-data");
    registry = await startRegistry(data, ws.home);
    const env = { KILN_HOME: ws.home };
    const token = (await kilnCli(["registry", "token", "--data", data, "--namespace", "acme"], env, ws.home)).trim();
    const skill = join(ws.home, "..", "pdf-forms");
    mkdirSync(skill, { recursive: true });
    writeFileSync(
      join(skill, "SKILL.md"),
      "---\nname: pdf-forms\ndescription: Fill in PDF forms and read their fields.\n---\n# PDF forms\nUse pypdf.\n",
    );
    await kilnCli(
      ["skills", "publish", skill, "--registry", registry.url, "--token", token, "--version", "1.0.0"],
      env,
      ws.home,
    );
    kiln = await startKiln(ws.root, ws.home, ["unused"], {}, {}, { KILN_REGISTRY: registry.url });
  });

  after(async () => {
    await kiln?.close();
    await registry?.close();
    ws?.cleanup();
  });

  test("search finds the published skill in the shape the quick pick reads", async () => {
    const result = await kiln.protocol.searchSkills("pdf forms");
    const hit = result.skills?.[0];
    assert.equal(hit?.id, "acme/pdf-forms");
    assert.equal(hit?.latestVersion, "1.0.0");
    assert.match(String(hit?.description), /PDF forms/);
  });

  test("install without the user's yes is refused with a hint; with it, the skill lands and is listed", async () => {
    await assert.rejects(kiln.protocol.installSkill("acme/pdf-forms@1.0.0", { scope: "project" }), (err) => {
      assert.ok(err instanceof KilnRpcError);
      assert.equal(err.code, -31004); // "not allowed", as PROTOCOL.md §6 says
      assert.match(err.message, /not confirmed/);
      assert.match(err.hint, /review/);
      // The review the extension shows before asking again with yes.
      const review = err.data.review as Record<string, unknown>;
      assert.equal(review.id, "acme/pdf-forms");
      assert.equal(review.version, "1.0.0");
      assert.deepEqual((review.files as { path: string }[]).map((f) => f.path), ["SKILL.md"]);
      assert.deepEqual(review.scripts, []);
      return true;
    });
    const done = await kiln.protocol.installSkill("acme/pdf-forms@1.0.0", { scope: "project", yes: true });
    assert.equal(done.id, "acme/pdf-forms");
    assert.equal(done.version, "1.0.0");
    assert.ok(existsSync(join(done.path, "SKILL.md")), done.path);
    const listed = await kiln.protocol.listSkills();
    assert.ok(listed.skills.some((s) => s.name === "pdf-forms" && s.thirdParty));
  });
});
