/** Server completion items (`kiln/complete/*`) as the composer's menu entries and pills. */

import type { Completion } from "./messages";
import type { CommandItem, MentionItem } from "./types";

export function commandCompletions(commands: CommandItem[]): Completion[] {
  return commands.map((c) => ({
    kind: c.kind,
    label: `/${c.name}${c.args ? ` ${c.args}` : ""}`,
    detail: c.description,
    insert: `/${c.name} `,
  }));
}

export function mentionCompletions(items: MentionItem[]): Completion[] {
  return items.map((i) => {
    const name = i.kind === "symbol" ? i.label : i.path;
    return {
      kind: i.kind,
      label: name,
      detail: i.kind === "symbol" ? i.detail : undefined,
      insert: `@${name} `,
      context: {
        label: `@${name}`,
        uri: i.uri,
        ...(i.kind === "symbol" && i.line ? { range: { startLine: i.line, endLine: i.endLine ?? i.line } } : {}),
      },
    };
  });
}
