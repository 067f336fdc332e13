import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/**
 * How to start a thread whose entry is the file `name` next to the module at
 * `base` (its `import.meta.url`): `name.ts` when the sources run as TypeScript
 * (tests, benches: under tsx, which the thread needs too), `name.js` in a
 * build, where the bundler emits each thread's entry as a file of its own
 * (packages/server/tsup.config.ts lists them).
 */
export function workerScript(name: string, base: string): { url: URL; execArgv: string[] } {
  const source = base.endsWith(".ts");
  return {
    url: new URL(`./${name}.${source ? "ts" : "js"}`, base),
    execArgv: source ? ["--import", pathToFileURL(createRequire(base).resolve("tsx")).href] : [],
  };
}

/**
 * Every thread entry of the engine, by file name (without its extension): a
 * build emits each as a file of its own (packages/server/tsup.config.ts, and
 * the benches that bundle the engine as the service runs it).
 */
export const THREAD_SCRIPTS = [
  "engine.worker",
  "inference.worker",
  "vision.worker",
  "object-detector.worker",
  "face-detector.worker",
  "pose-keypoints.worker",
] as const;
