import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/**
 * How to start a thread whose entry is the file `name` next to the module at
 * `base` (its `import.meta.url`): `name.ts` when the sources run as TypeScript
 * (tests, benches: under tsx, which the thread needs too), `name.js` in a
 * build, where the bundler emits each thread's entry as a file of its own
 * (THREAD_SCRIPTS below lists them).
 */
export function workerScript(name: keyof typeof THREAD_SCRIPTS, base: string): { url: URL; execArgv: string[] } {
  const source = base.endsWith(".ts");
  return {
    url: new URL(`./${name}.${source ? "ts" : "js"}`, base),
    execArgv: source ? ["--import", pathToFileURL(createRequire(base).resolve("tsx")).href] : [],
  };
}

/**
 * Every thread entry of the engine: its name, the file a build emits for it
 * (packages/server/tsup.config.ts, and the benches that bundle the engine as
 * the service runs it), and its source under src/, without the extension. A
 * build puts every entry in one folder, under its name; the sources keep each
 * beside the module that starts it (workerScript), so a name is unique.
 */
export const THREAD_SCRIPTS = {
  "engine.worker": "runtime/engine.worker",
  "inference.worker": "runtime/inference.worker",
  "vision.worker": "vision/vision.worker",
  "object-detector.worker": "vision/object-detector.worker",
  "face-detector.worker": "vision/face-detector.worker",
  "pose-keypoints.worker": "vision/pose-keypoints.worker",
  "patch-search.worker": "inpainting/patch-search.worker",
} as const;
