import path from "node:path";
import { fileURLToPath } from "node:url";
import { THREAD_SCRIPTS } from "../src/runtime/worker-script";

/**
 * A bench file and the engine's thread entries as one ES-module bundle, made
 * with esbuild as the server's build makes its own, every npm package left
 * out; returns the bench's entry in the bundle. The service runs bundled
 * JavaScript: TypeScript compiled by tsx in every thread adds its own memory
 * to each, and its own time to each thread's start.
 */
export async function bundleBench(bench: string, name: string): Promise<string> {
  const { build } = await import("esbuild");
  // Inside node_modules, so that the bundle finds the packages it leaves out.
  const outdir = fileURLToPath(new URL(`../node_modules/.cache/retouch-${name}/`, import.meta.url));
  await build({
    entryPoints: {
      [name]: bench,
      // Threads start from their entry's file next to the module that starts them (src/runtime/worker-script.ts).
      ...Object.fromEntries(
        Object.entries(THREAD_SCRIPTS).map(([name, source]) => [
          name,
          fileURLToPath(new URL(`../src/${source}.ts`, import.meta.url)),
        ]),
      ),
    },
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node22",
    packages: "external",
    logLevel: "warning",
  });
  return path.join(outdir, `${name}.js`);
}
