/**
 * Slash commands typed in the panel: `/clear`, `/compact`, `/mode`, `/model`, `/context` run
 * here; any other name is an installed skill, whose instructions `kiln/skills/use` returns as a
 * prompt block sent ahead of the rest of the line (`/pdf fill the form`).
 */

import type { KilnProtocol } from "../protocol/client";
import type { ContextItem, Reference } from "../protocol/messages";
import type { PromptBlock } from "../protocol/types";
import { contextBlocks } from "./composerHost";

/** What a command may use of the chat controller. */
export interface CommandHost {
  sessionId: string | null;
  mode: { mode: string; editMode: string };
  info(message: string): void;
  newSession(): Promise<string>;
  compact(): Promise<void>;
  setMode(mode?: string, editMode?: string): Promise<void>;
  setModel(model: string): Promise<void>;
  send(blocks: PromptBlock[], text: string, references: Reference[], draft?: { text: string; context: ContextItem[] }): Promise<string>;
}

export async function runCommand(
  chat: CommandHost,
  protocol: KilnProtocol,
  name: string,
  args: string,
  context: ContextItem[],
): Promise<void> {
  switch (name) {
    case "clear":
      await chat.newSession();
      return;
    case "compact":
      return chat.compact();
    case "mode": {
      if (!args) return chat.info(`Mode ${chat.mode.mode}, edits ${chat.mode.editMode}.`);
      const edits = ["deferred", "auto"].includes(args);
      await chat.setMode(edits ? undefined : args, edits ? args : undefined);
      return;
    }
    case "model":
      await chat.setModel(args);
      return;
    case "context": {
      if (!chat.sessionId) return chat.info("No session yet: the context is empty.");
      const c = await protocol.contextShow(chat.sessionId);
      const modified = Array.isArray(c.filesModified) ? (c.filesModified as string[]) : [];
      const files = modified.length ? `; files modified: ${modified.join(", ")}` : "";
      return chat.info(
        `Context: ${c.messages} messages, ${c.turns} turns, ${c.steps} steps, window ${c.contextWindow ?? "?"} tokens${files}.`,
      );
    }
    default: {
      const skill = await protocol.useSkill(name);
      const text = args || `Use the ${skill.name} skill.`;
      const refs = [
        { uri: `kiln-skill:${skill.name}`, label: `/${skill.name}` },
        ...context.map((c) => ({ uri: c.uri, label: c.label })),
      ];
      const draft = { text: `/${name}${args ? ` ${args}` : ""}`, context };
      await chat.send([skill.block, { type: "text", text }, ...contextBlocks(context)], text, refs, draft);
    }
  }
}
