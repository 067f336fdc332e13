/**
 * `pnpm bench` (in packages/engine), learned models: background removal with
 * IS-Net (the test weights, scripts/fetch-test-models.ts) at its published
 * 1024x1024 input and resized to 768 and to 704 (the catalog's default), next to the classical segmenter and the
 * floor (decode + PNG encode of the same image), on a real photograph at 1 MP
 * and 12 MP: median time and the peak RSS of one edit. Then the service's
 * shape: an EnginePool of two threads, two edits at once (the inference thread
 * shared), wall time per pair and the process's peak RSS, under the glibc
 * settings `pnpm start` runs the service with and under glibc's defaults.
 *
 * Each case runs in a child process of its own, so its peak RSS is its own.
 *
 *     pnpm --filter @retouch/engine bench        (or pnpm bench at the root, with the other benches)
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { fetchIsnetModel } from "../../../scripts/fetch-test-models";
import { MALLOC_SETTINGS, withMallocSettings } from "../../server/scripts/malloc-settings.mjs";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage, encodeImage } from "../src/pixels/image-codec";
import { EnginePool } from "../src/runtime/engine-pool";
import { createImageEngine, type ImageEngineOptions } from "../src/workflows/engine";
import { median, timed } from "./bench-timing";

const here = path.dirname(fileURLToPath(import.meta.url));
const workDirectory = path.join(os.tmpdir(), "retouch-models-bench");

const ENGINES = {
  classical: { label: "classical segmenter", inputSize: undefined },
  "isnet-1024": { label: "IS-Net, 1024x1024 (as published)", inputSize: 1024 },
  "isnet-768": { label: "IS-Net, resized to 768x768", inputSize: 768 },
  "isnet-704": { label: "IS-Net, resized to 704x704 (the default)", inputSize: 704 },
} as const;
type EngineName = keyof typeof ENGINES;

const SIZES = [
  // The apple is square: 1024² and 3464² are 1.0 and 12.0 MP.
  { name: "1 MP", width: 1024, height: 1024, runs: 3 },
  { name: "12 MP", width: 3464, height: 3464, runs: 2 },
];

function options(name: EngineName, modelPath: string): ImageEngineOptions {
  const { inputSize } = ENGINES[name];
  return inputSize ? { backgroundModel: { path: modelPath, kind: "isnet", inputSize } } : {};
}

const inputFile = (width: number) => path.join(workDirectory, `apple-${width}.jpg`);

/** A product-style photograph from the fixtures (the apple: the classical segmenter answers it too) at each size (upscaled for 12 MP: the model sees 1024 pixels a side at most). */
async function prepareInputs(): Promise<void> {
  await mkdir(workDirectory, { recursive: true });
  const photo = await readFile(path.join(here, "..", "test", "fixtures", "apple.jpg"));
  for (const size of SIZES) {
    const bytes = await sharp(photo).resize(size.width, size.height).jpeg({ quality: 92 }).toBuffer();
    await writeFile(inputFile(size.width), bytes);
  }
}

const PROMPT = "remove the background";
const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
const peakRss = () => process.resourceUsage().maxRSS * 1024;

/** Child mode: one engine on one size, in this process's main thread. */
async function runSingle(name: EngineName, width: number, runs: number, modelPath: string): Promise<void> {
  const bytes = await readFile(inputFile(width));
  const engine = createImageEngine({ ...options(name, modelPath), onnxRunner: new LocalOnnxRunner() });
  await engine.warmUp?.();
  const idle = peakRss();
  await engine.edit({ image: bytes, prompt: PROMPT });
  const peak = peakRss();
  const time = await timed(() => engine.edit({ image: bytes, prompt: PROMPT }), runs);
  const floor = await timed(async () => encodeImage(await decodeImage(bytes), "png"), runs);
  console.log(JSON.stringify({ time, floor, idle, peak }));
}

/** Child mode: the service's shape, an EnginePool of two, two edits at once, `rounds` times. */
async function runPool(name: EngineName, width: number, rounds: number, modelPath: string): Promise<void> {
  const bytes = await readFile(inputFile(width));
  const pool = new EnginePool(2, { maxPixels: 40_000_000, ...options(name, modelPath) }, { warn: () => {} });
  // The first pair starts both threads and loads the model.
  await Promise.all([pool.edit({ image: bytes, prompt: PROMPT }), pool.edit({ image: bytes, prompt: PROMPT })]);
  const walls: number[] = [];
  const latencies: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    await Promise.all(
      [0, 1].map(async () => {
        await pool.edit({ image: bytes, prompt: PROMPT });
        latencies.push(performance.now() - started);
      }),
    );
    walls.push(performance.now() - started);
  }
  const peak = peakRss();
  await pool.close();
  console.log(JSON.stringify({ wall: median(walls), latency: median(latencies), peak }));
}

/** `pnpm start` runs the service under these glibc settings (packages/server/scripts/malloc-settings.mjs). */
const SERVICE_ENV = withMallocSettings(process.env);
const GLIBC_DEFAULTS = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in MALLOC_SETTINGS)));

function child<T>(args: string[], env: NodeJS.ProcessEnv = SERVICE_ENV): T {
  const output = execFileSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), ...args], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
    env,
  });
  return JSON.parse(output.trim().split("\n").pop() ?? "{}") as T;
}

const seconds = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);
const load = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(" / ");

async function main(): Promise<void> {
  const [mode, name, width, count, modelPath] = process.argv.slice(2);
  if (mode === "--single" || mode === "--pool") {
    const run = mode === "--single" ? runSingle : runPool;
    await run(name as EngineName, Number(width), Number(count), modelPath ?? "");
    return;
  }
  const model = await fetchIsnetModel();
  await prepareInputs();
  console.log("# Learned models bench\n");
  console.log(
    `Machine: ${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.availableParallelism()} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM; Node ${process.version}; load average at start ${load()}`,
  );
  console.log(`Model: IS-Net test weights (${path.basename(model)}); onnxruntime threads: ${os.availableParallelism()}\n`);
  console.log("## One edit at a time (median; floor = decode + PNG encode of the same image)\n");
  console.log("| Background removal | Size | Time | Floor | Ratio | Peak RSS of one edit (before it) |");
  console.log("|---|---|---|---|---|---|");
  for (const size of SIZES) {
    for (const engine of Object.keys(ENGINES) as EngineName[]) {
      const result = child<{ time: number; floor: number; idle: number; peak: number }>([
        "--single",
        engine,
        String(size.width),
        String(size.runs),
        model,
      ]);
      console.log(
        `| ${ENGINES[engine].label} | ${size.name} | ${seconds(result.time)} | ${seconds(result.floor)} | ${(result.time / result.floor).toFixed(1)}x | ${mib(result.peak)} (${mib(result.idle)}) |`,
      );
    }
  }
  console.log("\n## The service's shape: EnginePool of 2 threads, two edits at once (median of 3 pairs)\n");
  console.log(
    `Peak RSS of the process under \`pnpm start\`'s glibc settings (${Object.entries(MALLOC_SETTINGS)
      .map(([name, value]) => `${name}=${value}`)
      .join(", ")}), as the service runs, and under glibc's defaults.\n`,
  );
  console.log(
    "| Background removal | Size | Wall time per pair | Latency of an edit | Peak RSS (pnpm start) | Peak RSS (glibc defaults) |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const size of SIZES) {
    for (const engine of Object.keys(ENGINES) as EngineName[]) {
      const args = ["--pool", engine, String(size.width), "3", model];
      const result = child<{ wall: number; latency: number; peak: number }>(args);
      const defaults = child<{ peak: number }>(args, GLIBC_DEFAULTS);
      console.log(
        `| ${ENGINES[engine].label} | ${size.name} | ${seconds(result.wall)} | ${seconds(result.latency)} | ${mib(result.peak)} | ${mib(defaults.peak)} |`,
      );
    }
  }
  console.log(`\nLoad average at the end: ${load()}`);
}

await main();
