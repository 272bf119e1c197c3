/**
 * Text from the model, a tool, the server or a registry put into a VS Code notification. VS Code
 * draws `[label](https:…)`, `[label](file:…)` and `[label](command:…)` in a notification's
 * message as links, and a `command:` link runs that command, with the arguments it names, when
 * clicked: a tool call's title (the command line the model wrote) could offer one as "Show
 * output". A zero-width space between `]` and `(` leaves the text as it reads and links nothing.
 */
export function noLinks(text: string): string {
  return String(text ?? "").replace(/\]\(/g, "]\u200b("); // a title the server left out: ""
}
