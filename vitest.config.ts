import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // Tests use the SDK's sources; the CLI binary under test uses the built package.
    alias: { "@retouch/sdk": fileURLToPath(new URL("./packages/sdk/src/index.ts", import.meta.url)) },
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/*/test/**/*.test.ts"],
    // One embedded PostgreSQL for the run; each test file gets its own database cloned from a migrated template.
    globalSetup: ["./test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most files wait on PostgreSQL, sockets or child processes more than they compute: vitest's default
    // (cores - 1) leaves a 2-core CI machine half idle. Two forks there ran the suite without a flake
    // even under a load average of 10 (four other test runs beside it).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: ["default"],
  },
});
