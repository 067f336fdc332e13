import module from "node:module";
import { fileURLToPath } from "node:url";

/**
 * Keeps V8's compiled code of the bundle on disk, so a later start skips most
 * of its parsing and compiling. The cache lives next to the bundle, in
 * dist/.compile-cache (a rebuild starts it afresh), or in `NODE_COMPILE_CACHE`
 * when that is set; never in a shared temporary directory, where another user
 * could plant code. Running from the TypeScript sources (`pnpm dev`), nothing
 * is cached unless `NODE_COMPILE_CACHE` asks for it. Must run before the
 * modules it should cover are imported; a cache that cannot be written only
 * costs speed.
 */
export function enableCompileCache(): void {
  // Node 22.8 and later.
  if (typeof module.enableCompileCache !== "function") return;
  const bundled = import.meta.url.endsWith(".js");
  const directory =
    process.env.NODE_COMPILE_CACHE ?? (bundled ? fileURLToPath(new URL(".compile-cache", import.meta.url)) : undefined);
  if (!directory) return;
  const result = module.enableCompileCache(directory);
  // The engine threads read it from the environment they inherit.
  if (result.directory) process.env.NODE_COMPILE_CACHE = result.directory;
}

/** Writes what was compiled so far now, rather than at exit: a killed process leaves it too. */
export function saveCompileCache(): void {
  if (typeof module.flushCompileCache === "function") module.flushCompileCache();
}
