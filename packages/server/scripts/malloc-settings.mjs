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
 * - GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc 2.35 and later; the kernel's
 *   transparent huge pages in "madvise" or "always" mode). The price of the
 *   threshold above is that every large block is mapped afresh and faulted in
 *   4 KiB at a time on each use: a 1 MP removal faulted in about 235,000 pages,
 *   the segmenter's encoder 58,000 a pass (0.81-0.85 s against 0.73 s under
 *   glibc's defaults). With huge pages for those mappings, 90,000 pages a
 *   removal and 3,000 an encoder pass (0.63-0.70 s); the 1 MP removal in the
 *   stage bench went from 1.95-2.33 s to 1.69-1.97 s (basketball, three
 *   alternating pairs; through the service, five jobs each way, within the
 *   jobs' spread), and the 12 MP worker's peak stayed where it was (956 MiB,
 *   986 without). Elsewhere glibc ignores it (docs/engine.md).
 *
 * Setting any of them yourself keeps your value (GLIBC_TUNABLES whole: add
 * glibc.malloc.hugetlb=1 to your own tunables to keep it); musl and other C
 * libraries ignore them.
 */
export const MALLOC_SETTINGS = Object.freeze({
  MALLOC_ARENA_MAX: "2",
  MALLOC_MMAP_THRESHOLD_: "131072",
  GLIBC_TUNABLES: "glibc.malloc.hugetlb=1",
});

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
