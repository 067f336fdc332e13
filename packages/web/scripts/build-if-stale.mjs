// @ts-check
/**
 * Builds the dashboard into packages/web/dist (Vite) when it is missing or was
 * built from other sources than the ones on disk now. It runs at every
 * `pnpm install` (this package's postinstall), so a fresh clone's
 * `pnpm install && pnpm start` serves the dashboard, and costs milliseconds
 * when nothing changed. The same scheme as packages/server/scripts/build-if-stale.mjs:
 * a fingerprint of the sources (path, size, mtime), of the SDK sources the app
 * bundles, and of pnpm's record of the installed packages; the build goes to a
 * folder of its own that replaces dist/ in one rename.
 *
 *   node scripts/build-if-stale.mjs            build when stale
 *   node scripts/build-if-stale.mjs --force    build anyway
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const webDistDir = path.join(webDir, "dist");
const rootDir = path.resolve(webDir, "../..");
const FINGERPRINT_FILE = ".sources-fingerprint";
const SOURCES = [
  "packages/web/src",
  "packages/web/public",
  "packages/web/index.html",
  "packages/web/vite.config.ts",
  "packages/web/package.json",
  // The dashboard bundles the SDK's sources (its polling and error helpers).
  "packages/sdk/src",
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

/** The fingerprint of the dashboard's inputs as they are on disk now. */
export function webSourcesFingerprint() {
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
    return readFileSync(path.join(webDistDir, FINGERPRINT_FILE), "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Builds dist/ unless it matches the sources.
 * @param {{ quiet?: boolean, force?: boolean }} [options] quiet: print nothing unless the build fails; force: build even if up to date
 * @returns {boolean} whether it built
 */
export function ensureWebBuild(options = {}) {
  const fingerprint = webSourcesFingerprint();
  if (!options.force && builtFingerprint() === fingerprint) return false;
  const require = createRequire(path.join(webDir, "package.json"));
  let viteCli;
  try {
    const vitePackage = require.resolve("vite/package.json");
    viteCli = path.join(path.dirname(vitePackage), JSON.parse(readFileSync(vitePackage, "utf8")).bin.vite);
  } catch {
    // An install without this package's dependencies (pnpm --filter elsewhere): nothing to build with.
    process.stderr.write("The dashboard was not built: Vite is not installed (run `pnpm install`).\n");
    return false;
  }
  const started = Date.now();
  if (!options.quiet) process.stderr.write("Building the dashboard (packages/web)...\n");
  const outDir = `${webDistDir}.building-${process.pid}`;
  const previous = `${webDistDir}.previous-${process.pid}`;
  try {
    execFileSync(process.execPath, [viteCli, "build", "--logLevel", "warn", "--outDir", outDir, "--emptyOutDir"], {
      cwd: webDir,
      stdio: ["ignore", "ignore", "inherit"],
    });
    writeFileSync(path.join(outDir, FINGERPRINT_FILE), fingerprint);
    try {
      renameSync(webDistDir, previous);
    } catch {
      // No dist/ yet, or another build is swapping its own in right now.
    }
    try {
      renameSync(outDir, webDistDir);
    } catch (error) {
      // Another build put its dist/ in place first; keep it if it is of these sources.
      if (builtFingerprint() !== fingerprint) throw error;
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
    rmSync(previous, { recursive: true, force: true });
  }
  if (!options.quiet) process.stderr.write(`Built packages/web/dist in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`);
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    ensureWebBuild({ force: process.argv.includes("--force") });
  } catch {
    process.stderr.write("The dashboard could not be built; the errors are above.\n");
    process.exit(1);
  }
}
