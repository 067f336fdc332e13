// @ts-check
/**
 * Builds packages/server/dist (tsup) when it is missing or was built from
 * other sources than the ones on disk now: the server's, core's and engine's
 * sources, their package.json files and the build and TypeScript configs (and
 * pnpm's record of the installed packages; the scheme is scripts/stale-build.mjs).
 * JavaScript, not TypeScript: it runs before anything is built, at every
 * `pnpm start`, and must cost milliseconds.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { staleBuild } from "../../../scripts/stale-build.mjs";

export const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const build = staleBuild({
  packageDir: serverDir,
  sources: [
    "packages/core/src",
    "packages/core/package.json",
    "packages/engine/src",
    "packages/engine/package.json",
    "packages/server/src",
    "packages/server/package.json",
    "packages/server/tsup.config.ts",
    "tsconfig.json",
    "tsconfig.base.json",
  ],
  tool: "tsup",
  args: (outDir) => ["--silent", "--out-dir", outDir],
  announce: (force) => `Building the server${force ? "" : " (its sources changed since the last build)"}...`,
});

export const distDir = build.distDir;
/** The fingerprint of the bundle's inputs as they are on disk now. */
export const sourcesFingerprint = build.sourcesFingerprint;
/**
 * Builds dist/ unless it matches the sources; returns whether it built.
 * quiet: print nothing unless the build fails; force: build even if up to date.
 */
export const ensureServerBuild = build.ensureBuild;

// `pnpm --filter @retouch/server build`: node scripts/build-if-stale.mjs --force
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureServerBuild({ force: process.argv.includes("--force") });
}
