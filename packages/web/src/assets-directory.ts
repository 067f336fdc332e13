import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * This package's folder. Resolved by name first: the server bundles this
 * module into packages/server/dist, where `import.meta.url` is the bundle's
 * address, not this file's; the name resolves from there through the
 * server's dependency on @retouch/web. From the sources (tests, `pnpm dev`)
 * the file's own location gives the same folder.
 */
function packageDirectory(): string {
  try {
    return path.dirname(createRequire(import.meta.url).resolve("@retouch/web/package.json"));
  } catch {
    return path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  }
}

/**
 * The absolute path of the built dashboard (packages/web/dist), or undefined
 * when it is not built (no dist/index.html). Node side only: no React here.
 */
export function webAssetsDirectory(): string | undefined {
  const dist = path.join(packageDirectory(), "dist");
  return existsSync(path.join(dist, "index.html")) ? dist : undefined;
}
