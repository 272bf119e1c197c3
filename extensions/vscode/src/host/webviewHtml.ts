/** The chat panel's HTML page, kept free of the `vscode` API so a real browser test loads it. */

import { randomBytes } from "node:crypto";

/**
 * The panel's page. The policy allows only our own script (by a fresh CSPRNG nonce), our own
 * stylesheet, and images from the extension or `data:` URLs: nothing in an answer can make the
 * panel fetch a remote URL (a zero-click exfiltration channel for a prompt injection).
 */
export function webviewHtml(cspSource: string, script: string, style: string, nonce = randomBytes(18).toString("base64")): string {
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "form-action 'none'",
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Kiln</title>
</head>
<body>
<div id="kiln-root"></div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}
