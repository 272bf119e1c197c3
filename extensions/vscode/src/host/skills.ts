/**
 * Skill commands: search the registry, install after the user has seen what they are getting,
 * list what is installed. Every call goes through `kiln lsp`, which owns verification, the
 * lockfile and the install scopes.
 */

import * as vscode from "vscode";
import { type KilnProtocol, KilnRpcError } from "../protocol/client";

type Item = Record<string, unknown>;
const s = (v: unknown) => (typeof v === "string" ? v : v == null ? "" : String(v));

/** The facts a person should read before saying yes (what the registry said about the skill). */
export function reviewSummary(item: Item): string {
  const lines = [
    `${s(item.id)}@${s(item.latestVersion ?? item.version) || "latest"}`,
    s(item.description),
  ];
  if (item.deprecated) lines.push("⚠ This skill is deprecated.");
  lines.push(
    "",
    "The skill's files are verified against the registry's checksum and recorded in the lockfile.",
    "Skills from third parties are treated as data: their instructions cannot approve tools.",
  );
  return lines.filter((l, i) => l !== "" || i > 1).join("\n");
}

export function showError(err: unknown): void {
  const e = KilnRpcError.from(err);
  void vscode.window.showErrorMessage(e.hint ? `${e.message} — ${e.hint}` : e.message);
}

export async function installWithReview(protocol: KilnProtocol, item: Item): Promise<boolean> {
  const id = s(item.id);
  const version = s(item.latestVersion ?? item.version);
  const scope = await vscode.window.showQuickPick(
    [
      { label: "Project", description: ".kiln/skills in this workspace", scope: "project" as const },
      { label: "User", description: "~/.kiln/skills for every workspace", scope: "user" as const },
    ],
    { title: `Install ${id} into…` },
  );
  if (!scope) return false;
  const choice = await vscode.window.showInformationMessage(
    `Install skill ${id}${version ? `@${version}` : ""}?`,
    { modal: true, detail: reviewSummary(item) },
    "Install",
  );
  if (choice !== "Install") return false;
  try {
    const done = await protocol.installSkill(version ? `${id}@${version}` : id, {
      scope: scope.scope,
      yes: true,
    });
    void vscode.window.showInformationMessage(`Kiln: ${done.action} ${done.id}@${done.version}.`);
    return true;
  } catch (err) {
    showError(err);
    return false;
  }
}

export async function searchSkills(protocol: KilnProtocol): Promise<void> {
  const query = await vscode.window.showInputBox({ prompt: "Search Kiln skills", placeHolder: "e.g. pdf, release notes" });
  if (query === undefined) return;
  let items: Item[];
  try {
    const result = await protocol.searchSkills(query);
    items = Array.isArray(result.skills) ? result.skills : [];
  } catch (err) {
    showError(err);
    return;
  }
  if (items.length === 0) {
    void vscode.window.showInformationMessage(`No skills match "${query}".`);
    return;
  }
  const pick = await vscode.window.showQuickPick(
    items.map((item) => ({
      label: s(item.id),
      description: s(item.latestVersion),
      detail: s(item.description),
      item,
    })),
    { title: "Install a skill", matchOnDetail: true },
  );
  if (pick) await installWithReview(protocol, pick.item);
}

export async function installSkill(protocol: KilnProtocol): Promise<void> {
  const spec = await vscode.window.showInputBox({ prompt: "Skill to install", placeHolder: "namespace/name[@version]" });
  if (!spec) return;
  const [id, version] = spec.split("@");
  await installWithReview(protocol, { id, latestVersion: version ?? "", description: "" });
}

export async function listSkills(protocol: KilnProtocol): Promise<void> {
  let skills;
  try {
    skills = (await protocol.listSkills()).skills;
  } catch (err) {
    showError(err);
    return;
  }
  if (skills.length === 0) {
    void vscode.window.showInformationMessage("No skills installed. Try Kiln: Search Skills.");
    return;
  }
  const pick = await vscode.window.showQuickPick(
    skills.map((k) => ({
      label: k.name,
      description: `${k.scope}${k.thirdParty ? " · third party" : ""}`,
      detail: k.description,
      path: k.path,
    })),
    { title: "Installed skills", matchOnDetail: true },
  );
  if (pick) {
    const file = pick.path.endsWith("SKILL.md") ? pick.path : `${pick.path}/SKILL.md`;
    await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
  }
}
