// @ts-check
/**
 * Builds packages/server/dist (tsup) when it is missing or was built from
 * other sources than the ones on disk now. JavaScript, not TypeScript: it runs
 * before anything is built, at every `pnpm start`, and must cost milliseconds.
 *
 * "Other sources" is a fingerprint of what the bundle is made of: the path,
 * size and modification time of the server's, core's and engine's sources, their
 * package.json files and the build and TypeScript configs; and the content of
 * pnpm's record of the installed packages (node_modules/.pnpm/lock.yaml, with
 * the patches' hashes), which every `pnpm install` rewrites, changed or not.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const distDir = path.join(serverDir, "dist");
const rootDir = path.resolve(serverDir, "../..");
const FINGERPRINT_FILE = ".sources-fingerprint";
const SOURCES = [
  "packages/core/src",
  "packages/core/package.json",
  "packages/engine/src",
  "packages/engine/package.json",
  "packages/server/src",
  "packages/server/package.json",
  "packages/server/tsup.config.ts",
  "tsconfig.json",
  "tsconfig.base.json",
];
const INSTALLED = "node_modules/.pnpm/lock.yaml";

/**
 * @param {string} file
 * @param {string[]} lines
 */
function collect(file, lines) {
  let stats;
  try {
    stats = statSync(file);
  } catch {
    return;
  }
  if (stats.isDirectory()) {
    for (const entry of readdirSync(file).sort()) collect(path.join(file, entry), lines);
  } else {
    lines.push(`${path.relative(rootDir, file)} ${stats.size} ${stats.mtimeMs}`);
  }
}

/** The fingerprint of the bundle's inputs as they are on disk now. */
export function sourcesFingerprint() {
  /** @type {string[]} */
  const lines = [];
  for (const source of SOURCES) collect(path.join(rootDir, source), lines);
  const hash = createHash("sha256").update(lines.join("\n"));
  try {
    hash.update(readFileSync(path.join(rootDir, INSTALLED)));
  } catch {
    // Not installed by pnpm: the sources alone decide.
  }
  return hash.digest("hex");
}

function builtFingerprint() {
  try {
    return readFileSync(path.join(distDir, FINGERPRINT_FILE), "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Builds dist/ unless it matches the sources. The build goes to a folder of
 * its own that then replaces dist/ in one rename, so a process starting
 * meanwhile (or a second build at the same time) never sees half a bundle.
 * @param {{ quiet?: boolean, force?: boolean }} [options] quiet: print nothing unless the build fails; force: build even if up to date
 * @returns {boolean} whether it built
 */
export function ensureServerBuild(options = {}) {
  const fingerprint = sourcesFingerprint();
  if (!options.force && builtFingerprint() === fingerprint) return false;
  const started = Date.now();
  if (!options.quiet)
    process.stderr.write(`Building the server${options.force ? "" : " (its sources changed since the last build)"}...\n`);
  const require = createRequire(path.join(serverDir, "package.json"));
  const tsupPackage = require.resolve("tsup/package.json");
  const tsupCli = path.join(path.dirname(tsupPackage), JSON.parse(readFileSync(tsupPackage, "utf8")).bin.tsup);
  const outDir = `${distDir}.building-${process.pid}`;
  const previous = `${distDir}.previous-${process.pid}`;
  try {
    execFileSync(process.execPath, [tsupCli, "--silent", "--out-dir", outDir], {
      cwd: serverDir,
      stdio: ["ignore", "ignore", "inherit"],
    });
    writeFileSync(path.join(outDir, FINGERPRINT_FILE), fingerprint);
    try {
      renameSync(distDir, previous);
    } catch {
      // No dist/ yet, or another build is swapping its own in right now.
    }
    try {
      renameSync(outDir, distDir);
    } catch (error) {
      // Another build put its dist/ in place first; keep it if it is of these sources.
      if (builtFingerprint() !== fingerprint) throw error;
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
    rmSync(previous, { recursive: true, force: true });
  }
  if (!options.quiet) process.stderr.write(`Built packages/server/dist in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`);
  return true;
}

// `pnpm --filter @retouch/server build`: node scripts/build-if-stale.mjs --force
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureServerBuild({ force: process.argv.includes("--force") });
}
