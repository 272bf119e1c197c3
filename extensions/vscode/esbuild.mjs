// Builds the extension (Node, CommonJS), the webview (browser IIFE) and the Node integration
// tests (bundled with the protocol module, dependencies left external).
import { build } from "esbuild";
import { copyFile, mkdir, readdir } from "node:fs/promises";

const target = process.argv[2] ?? "all";
const common = { bundle: true, sourcemap: true, logLevel: "warning" };

if (target === "all" || target === "extension") {
  await build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node18",
    external: ["vscode"],
  });
  await build({
    ...common,
    entryPoints: ["src/webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "es2020",
  });
  await mkdir("dist", { recursive: true });
  await copyFile("media/webview.css", "dist/webview.css");
}

if (target === "all" || target === "tests") {
  const files = (await readdir("test/integration")).filter((f) => f.endsWith(".test.ts"));
  await build({
    ...common,
    entryPoints: files.map((f) => `test/integration/${f}`),
    outdir: "out/integration",
    outExtension: { ".js": ".cjs" },
    platform: "node",
    format: "cjs",
    target: "node20",
    packages: "external",
  });
}

if (target === "browser-test") {
  await build({
    ...common,
    entryPoints: ["test/browser/webview.ts", "test/browser/edges.ts"],
    outdir: "out/browser",
    outExtension: { ".js": ".cjs" },
    platform: "node",
    format: "cjs",
    target: "node20",
    packages: "external",
  });
}
