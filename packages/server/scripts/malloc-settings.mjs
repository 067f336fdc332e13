// @ts-check
/**
 * glibc's allocator settings for a Retouch process. glibc reads them from the
 * environment once, when the process starts, so they cannot be set from
 * JavaScript: `pnpm start` (run-built.mjs) starts itself again with them.
 *
 * Measured on a worker editing 12 MP photos two at a time with no learned
 * model (packages/core/bench/memory.bench.ts and docs/engine.md):
 *
 * - MALLOC_ARENA_MAX=2. glibc gives every thread that allocates while another
 *   does an arena of its own, up to 8 per core: the two engine threads,
 *   libuv's four (where libvips runs) and V8's each filled one with pixel
 *   buffers, and an arena keeps what is freed in it (367 of the 440 MB held in
 *   15 arenas after the jobs were free, unreturned).
 * - MALLOC_MMAP_THRESHOLD_=131072. Blocks from 128 KiB up are mapped one by
 *   one and unmapped when freed, so their memory goes back to the system at
 *   once. Left alone, glibc raises this threshold each time a large block is
 *   freed, up to 32 MiB, after which 12 MB masks and libvips' buffers land in
 *   the arenas and stay there; a set value turns that off.
 *
 * Setting either one yourself (or both) keeps your value; musl and other C
 * libraries ignore them.
 */
export const MALLOC_SETTINGS = Object.freeze({ MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072" });

/** The environment with the settings added where it has none of its own. */
export function withMallocSettings(env = process.env) {
  return { ...MALLOC_SETTINGS, ...env };
}

function missingSettings() {
  return Object.keys(MALLOC_SETTINGS).some((name) => process.env[name] === undefined);
}

function onGlibc() {
  if (process.platform !== "linux") return false;
  const report = /** @type {{ header?: { glibcVersionRuntime?: string } }} */ (process.report?.getReport() ?? {});
  return Boolean(report.header?.glibcVersionRuntime);
}

/**
 * On glibc, when a setting is missing, replaces this process with the same
 * command under the settings (same process id, same standard streams, so
 * signals and exit codes are untouched); otherwise returns. Node 22.15 and
 * later can replace a process (`process.execve`); on older versions this
 * process goes on without the settings.
 */
export function relaunchWithMallocSettings() {
  if (!missingSettings() || typeof process.execve !== "function" || !onGlibc()) return;
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], withMallocSettings());
}
