// @ts-check
/**
 * The scheme behind packages/server/scripts/build-if-stale.mjs and
 * packages/web/scripts/build-if-stale.mjs: build a package's dist/ when it is
 * missing or was built from other inputs than the ones on disk now. Plain
 * JavaScript with no dependencies: it runs before anything is built (at every
 * `pnpm start`, every `pnpm install`) and must cost milliseconds.
 *
 * "Other inputs" is a fingerprint: the path, size and modification time of the
 * declared sources, and the content of pnpm's record of the installed packages
 * (node_modules/.pnpm/lock.yaml, with the patches' hashes), which every
 * `pnpm install` rewrites, changed or not. The fingerprint is kept in a marker
 * file inside dist/.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const rootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const FINGERPRINT_FILE = ".sources-fingerprint";
const INSTALLED = "node_modules/.pnpm/lock.yaml";

/**
 * @typedef {object} StaleBuildSpec
 * @property {string} packageDir the package's folder; the build lands in its dist/
 * @property {string[]} sources what the build is made of, relative to the repository root: files, and folders taken whole
 * @property {string} tool the package whose command-line program (of the same name) builds, resolved from packageDir
 * @property {(outDir: string) => string[]} args the program's arguments to build into outDir
 * @property {(force: boolean) => string} announce the line printed before a build (unless quiet)
 * @property {string} [missingTool] printed, and nothing built, when the tool is not installed; without it, a missing tool throws
 */

/**
 * @typedef {object} StaleBuild
 * @property {string} distDir
 * @property {() => string} sourcesFingerprint the fingerprint of the inputs as they are on disk now
 * @property {(options?: { quiet?: boolean, force?: boolean }) => boolean} ensureBuild builds dist/ unless it matches the
 *   inputs (quiet: print nothing unless the build fails; force: build even if up to date); returns whether it built
 */

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

/**
 * @param {StaleBuildSpec} spec
 * @returns {StaleBuild}
 */
export function staleBuild(spec) {
  const distDir = path.join(spec.packageDir, "dist");

  function sourcesFingerprint() {
    /** @type {string[]} */
    const lines = [];
    for (const source of spec.sources) collect(path.join(rootDir, source), lines);
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

  function toolCli() {
    const require = createRequire(path.join(spec.packageDir, "package.json"));
    try {
      const toolPackage = require.resolve(`${spec.tool}/package.json`);
      return path.join(path.dirname(toolPackage), JSON.parse(readFileSync(toolPackage, "utf8")).bin[spec.tool]);
    } catch (error) {
      if (spec.missingTool === undefined) throw error;
      process.stderr.write(`${spec.missingTool}\n`);
      return undefined;
    }
  }

  /**
   * The build goes to a folder of its own that then replaces dist/ in one
   * rename, so a process starting meanwhile (or a second build at the same
   * time) never sees half a bundle.
   * @param {{ quiet?: boolean, force?: boolean }} [options]
   */
  function ensureBuild(options = {}) {
    const fingerprint = sourcesFingerprint();
    if (!options.force && builtFingerprint() === fingerprint) return false;
    const cli = toolCli();
    if (cli === undefined) return false;
    const started = Date.now();
    if (!options.quiet) process.stderr.write(`${spec.announce(Boolean(options.force))}\n`);
    const outDir = `${distDir}.building-${process.pid}`;
    const previous = `${distDir}.previous-${process.pid}`;
    try {
      execFileSync(process.execPath, [cli, ...spec.args(outDir)], {
        cwd: spec.packageDir,
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
    if (!options.quiet)
      process.stderr.write(`Built ${path.relative(rootDir, distDir)} in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`);
    return true;
  }

  return { distDir, sourcesFingerprint, ensureBuild };
}
