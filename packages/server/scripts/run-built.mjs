// @ts-check
/**
 * `pnpm start` and `pnpm retouch`: builds the server (and, for `pnpm start`,
 * the dashboard it serves) when its sources changed since the last build (see
 * build-if-stale.mjs), then runs the built entry
 * in this same process. `pnpm start` first replaces the process with itself
 * under glibc's allocator settings (see malloc-settings.mjs).
 *
 *   node packages/server/scripts/run-built.mjs main [--role api|worker|all]
 *   node packages/server/scripts/run-built.mjs admin admin <command> ...
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ensureWebBuild } from "../../web/scripts/build-if-stale.mjs";
import { distDir, ensureServerBuild } from "./build-if-stale.mjs";
import { relaunchWithMallocSettings } from "./malloc-settings.mjs";

/** @type {Record<string, string>} */
const ENTRIES = { main: "main.js", admin: "admin.js" };

const entry = ENTRIES[process.argv[2] ?? ""];
if (!entry) {
  process.stderr.write(`usage: run-built.mjs <${Object.keys(ENTRIES).join("|")}> [arguments]\n`);
  process.exit(2);
}
// The service edits images in threads: glibc's allocator needs its settings before anything runs.
if (entry === ENTRIES.main) relaunchWithMallocSettings();
try {
  ensureServerBuild();
} catch {
  process.stderr.write("The server could not be built; the errors are above.\n");
  process.exit(1);
}
// The service serves the dashboard: an edit to it (or a pull) is built here too, not only at `pnpm install`.
if (entry === ENTRIES.main) {
  try {
    ensureWebBuild();
  } catch {
    process.stderr.write("The dashboard could not be rebuilt (the errors are above); the last build is served.\n");
  }
}
// The entry reads its own arguments from process.argv, after the script's path.
process.argv.splice(2, 1);
await import(pathToFileURL(path.join(distDir, entry)).href);
