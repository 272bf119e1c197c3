/**
 * Skill commands: search the registry, install after the user has seen what they are getting,
 * list what is installed. Every call goes through `kiln lsp`, which owns verification, the
 * lockfile and the install scopes.
 */

import { noLinks } from "../protocol/notificationText";
import * as vscode from "vscode";
import { type KilnProtocol, KilnRpcError } from "../protocol/client";

type Item = Record<string, unknown>;
const s = (v: unknown) => (typeof v === "string" ? v : v == null ? "" : String(v));

const kb = (n: unknown) => `${(Number(n) / 1024).toFixed(1)} KB`;

/**
 * The facts a person should read before saying yes. `review` is the server's review summary
 * (files, scripts, allowed tools, scanner findings); without one (an older server) the search
 * result's id, version and description are all there is.
 */
export function reviewSummary(item: Item, review?: Item): string {
  if (!review) {
    const lines = [`${s(item.id)}@${s(item.latestVersion ?? item.version) || "latest"}`, s(item.description)];
    if (item.deprecated) lines.push("⚠ This skill is deprecated.");
    return lines.filter(Boolean).join("\n");
  }
  const files = Array.isArray(review.files) ? (review.files as Item[]) : [];
  const scripts = Array.isArray(review.scripts) ? review.scripts.map(s) : [];
  const findings = Array.isArray(review.findings) ? review.findings : [];
  const tools = review.allowedTools;
  const lines = [
    `${s(review.id)}@${s(review.version)}${review.status && review.status !== "active" ? ` (${s(review.status)})` : ""}`,
    s(review.description),
    "",
    `Files (${files.length}, ${kb(review.sizeBytes ?? 0)}): ${files.map((f) => s(f.path)).join(", ") || "none"}`,
    scripts.length ? `⚠ Scripts: ${scripts.join(", ")}` : "Scripts: none",
    `Pre-approved tools: ${tools == null || (Array.isArray(tools) && tools.length === 0) ? "none" : Array.isArray(tools) ? tools.map(s).join(", ") : s(tools)}`,
    findings.length
      ? `⚠ Scanner findings: ${findings.map((f) => (typeof f === "object" && f ? s((f as Item).message ?? (f as Item).rule ?? JSON.stringify(f)) : s(f))).join("; ")}`
      : "Scanner findings: none",
  ];
  const tokens = review.tokens as Item | undefined;
  if (tokens) lines.push(`Context cost: ~${s(tokens.skillMd)} tokens when loaded (~${s(tokens.total)} with all files)`);
  return lines.join("\n");
}

export function showError(err: unknown): void {
  const e = KilnRpcError.from(err);
  void vscode.window.showErrorMessage(noLinks(e.hint ? `${e.message} — ${e.hint}` : e.message));
}

/**
 * Install after review: the first call (without `yes`) either installs something that needs
 * no confirmation (e.g. pinned in the lockfile) or is declined with the server's review summary;
 * the user reads it in a modal, and only a yes sends the second call with `yes: true`.
 */
export async function installWithReview(protocol: KilnProtocol, item: Item): Promise<boolean> {
  const id = s(item.id);
  const version = s(item.latestVersion ?? item.version);
  const spec = version ? `${id}@${version}` : id;
  const scope = await vscode.window.showQuickPick(
    [
      { label: "Project", description: ".kiln/skills in this workspace", scope: "project" as const },
      { label: "User", description: "~/.kiln/skills for every workspace", scope: "user" as const },
    ],
    { title: `Install ${id} into…` },
  );
  if (!scope) return false;
  let review: Item | undefined;
  try {
    const done = await protocol.installSkill(spec, { scope: scope.scope });
    void vscode.window.showInformationMessage(`Kiln: ${done.action} ${done.id}@${done.version}.`);
    return true;
  } catch (err) {
    const e = KilnRpcError.from(err);
    if (!e.data.review || typeof e.data.review !== "object") {
      showError(e);
      return false;
    }
    review = e.data.review as Item;
  }
  const choice = await vscode.window.showInformationMessage(
    `Install skill ${s(review.id) || id}@${s(review.version) || version}?`,
    { modal: true, detail: reviewSummary(item, review) },
    "Install",
  );
  if (choice !== "Install") return false;
  try {
    const done = await protocol.installSkill(`${s(review.id) || id}@${s(review.version) || version}`, {
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
