// @ts-check
/**
 * Builds the dashboard into packages/web/dist (Vite) when it is missing or was
 * built from other sources than the ones on disk now. It runs at every
 * `pnpm install` (this package's postinstall), so a fresh clone's
 * `pnpm install && pnpm start` serves the dashboard, and costs milliseconds
 * when nothing changed. The scheme (fingerprint, build beside dist/ then one
 * rename) is scripts/stale-build.mjs, shared with the server's build.
 *
 *   node scripts/build-if-stale.mjs            build when stale
 *   node scripts/build-if-stale.mjs --force    build anyway
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { staleBuild } from "../../../scripts/stale-build.mjs";

export const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const build = staleBuild({
  packageDir: webDir,
  sources: [
    "packages/web/src",
    "packages/web/public",
    "packages/web/index.html",
    "packages/web/vite.config.ts",
    "packages/web/package.json",
    // The dashboard bundles the SDK's sources (its polling and error helpers).
    "packages/sdk/src",
  ],
  tool: "vite",
  args: (outDir) => ["build", "--logLevel", "warn", "--outDir", outDir, "--emptyOutDir"],
  announce: () => "Building the dashboard (packages/web)...",
  // An install without this package's dependencies (pnpm --filter elsewhere): nothing to build with.
  missingTool: "The dashboard was not built: Vite is not installed (run `pnpm install`).",
});

export const webDistDir = build.distDir;
/** The fingerprint of the dashboard's inputs as they are on disk now. */
export const webSourcesFingerprint = build.sourcesFingerprint;
/**
 * Builds dist/ unless it matches the sources; returns whether it built.
 * quiet: print nothing unless the build fails; force: build even if up to date.
 */
export const ensureWebBuild = build.ensureBuild;

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    ensureWebBuild({ force: process.argv.includes("--force") });
  } catch {
    process.stderr.write("The dashboard could not be built; the errors are above.\n");
    process.exit(1);
  }
}
