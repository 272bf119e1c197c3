import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// `vscode` exists only inside the editor; the glue tests run against a small stand-in of the
// API surface the extension uses (test/stubs/vscode.ts).
export default defineConfig({
  resolve: {
    alias: { vscode: fileURLToPath(new URL("./test/stubs/vscode.ts", import.meta.url)) },
  },
  test: {
    include: ["test/unit/**/*.test.ts"],
    environment: "node",
    testTimeout: 20000,
  },
});
