/**
 * `pnpm bench` (in packages/core), third part: the memory of a worker at
 * concurrency 2 on 12 MP photos with no learned model, as the service runs
 * edits: through an EnginePool of two threads, two edits at a time.
 *
 * A child process (so that its RSS is its own) first decodes and encodes the
 * same photos, two at a time, on its main thread: the floor, what any 12 MP
 * edit costs. Then its peak-RSS mark is reset and the pool runs a mix of edits
 * (classical background removal, object removal of a detected person, of
 * detected boats and of a masked area, black and white, blur the background)
 * twice over. It reports the peak (the kernel's VmHWM, checked against a
 * sample of RSS every 20 ms), the RSS when the last edit has returned, after
 * the pool has stood idle a few seconds (threads alive, as in a worker
 * between jobs), and after the pool is closed.
 *
 * The child runs a bundle of this file and of the worker thread, made with
 * esbuild as the server's build makes its own: the service runs bundled
 * JavaScript, and TypeScript compiled by tsx in every thread would add its
 * own memory to each of them.
 *
 * Environment variables pass to the child, so settings can be compared:
 * `MALLOC_ARENA_MAX=8 pnpm bench`, for example.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { grainyPhoto } from "../../../test/support/large-images";
import { EnginePool } from "../src/engine-pool";
import { decodeImage, encodeImage } from "../src/image-codec";
import { median } from "./bench-timing";

const fixtures = new URL("../test/engine/fixtures/", import.meta.url);
/** Inside node_modules, so that the bundle finds the packages it leaves out. */
const bundleDirectory = fileURLToPath(new URL("../node_modules/.cache/retouch-memory-bench/", import.meta.url));
const workDirectory = path.join(os.tmpdir(), "retouch-bench-memory");
const WIDTH = 4000;
const HEIGHT = 3000;
const ROUNDS = 3;
/** How long the pool stands idle before "after" is read again. */
const IDLE_MS = 5_000;

type Photo = "coffee" | "astronaut" | "boats";
const PHOTOS: Photo[] = ["coffee", "astronaut", "boats"];

interface Edit {
  name: string;
  photo: Photo;
  prompt: string;
  /** A white rectangle (x, y, width, height as fractions of the frame) to remove. */
  mask?: [number, number, number, number];
}

/** One round, in pairs: the first two together, then the next two, and so on. */
const EDITS: Edit[] = [
  { name: "background removal (classical)", photo: "coffee", prompt: "remove the background" },
  { name: "remove the person (detect + inpaint)", photo: "astronaut", prompt: "remove the person" },
  { name: "blur the background", photo: "coffee", prompt: "blur the background" },
  { name: "black and white", photo: "boats", prompt: "make it black and white" },
  { name: "remove a masked area", photo: "coffee", prompt: "remove the object", mask: [0.38, 0.33, 0.2, 0.2] },
  { name: "remove the boats (detect + inpaint)", photo: "boats", prompt: "remove the boats" },
];

const inputPath = (name: string) => path.join(workDirectory, `${name}-${WIDTH}.jpg`);
const maskPath = (edit: Edit) => path.join(workDirectory, `mask-${(edit.mask ?? []).join("-")}.png`);

/** 12 MP camera-like JPEGs (q95, sensor-like grain) made from fixture photos, and the masks. */
async function prepareInputs(): Promise<void> {
  await mkdir(workDirectory, { recursive: true });
  for (const photo of PHOTOS) {
    const image = await grainyPhoto(WIDTH, HEIGHT, 6, new URL(`${photo}.jpg`, fixtures));
    await writeFile(inputPath(photo), await image.jpeg({ quality: 95 }).toBuffer());
  }
  for (const edit of EDITS) {
    if (!edit.mask) continue;
    const [x, y, width, height] = edit.mask;
    const rectangle = await sharp({
      create: { width: Math.round(width * WIDTH), height: Math.round(height * HEIGHT), channels: 3, background: "#ffffff" },
    })
      .png()
      .toBuffer();
    const mask = await sharp({ create: { width: WIDTH, height: HEIGHT, channels: 3, background: "#000000" } })
      .composite([{ input: rectangle, left: Math.round(x * WIDTH), top: Math.round(y * HEIGHT) }])
      .png()
      .toBuffer();
    await writeFile(maskPath(edit), mask);
  }
}

interface Figures {
  start: number;
  floorPeak: number;
  floorAfter: number;
  peak: number;
  sampledPeak: number;
  roundPeaks: number[];
  roundTimes: number[];
  editTimes: Record<string, number[]>;
  failures: string[];
  afterJobs: number;
  afterIdle: number;
  afterClose: number;
}

function status(field: "VmRSS" | "VmHWM"): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync("/proc/self/status", "utf8"));
  return match ? Number(match[1]) * 1024 : process.memoryUsage.rss();
}

/** Starts the peak-RSS mark again from the current RSS (Linux: clear_refs 5). */
function resetPeak(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}

/** This file and the worker thread as one ES-module bundle with every npm package left out; returns the entry. */
async function bundle(): Promise<string> {
  const { build } = await import("esbuild");
  await build({
    entryPoints: {
      "memory.bench": fileURLToPath(import.meta.url),
      // Threads start from their entry's file next to the module that starts them (engine/worker-script.ts).
      "engine.worker": fileURLToPath(new URL("../src/engine.worker.ts", import.meta.url)),
      "inference.worker": fileURLToPath(new URL("../src/inference.worker.ts", import.meta.url)),
      "object-detector.worker": fileURLToPath(new URL("../src/object-detector.worker.ts", import.meta.url)),
    },
    outdir: bundleDirectory,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node22",
    packages: "external",
    logLevel: "warning",
  });
  return path.join(bundleDirectory, "memory.bench.js");
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Child mode: the measurement; prints a JSON line. */
async function measure(): Promise<void> {
  const inputs = new Map(await Promise.all(PHOTOS.map(async (photo) => [photo, await readFile(inputPath(photo))] as const)));
  const start = status("VmRSS");
  for (let i = 0; i < PHOTOS.length; i += 2) {
    await Promise.all(
      PHOTOS.slice(i, i + 2).map(async (photo) => encodeImage(await decodeImage(inputs.get(photo) as Buffer), "jpeg")),
    );
  }
  const floorPeak = status("VmHWM");
  const floorAfter = status("VmRSS");

  let sampledPeak = 0;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, process.memoryUsage.rss());
  }, 20);
  const peakMark = resetPeak();
  const pool = new EnginePool(2, {}, { warn: () => {} });
  const roundPeaks: number[] = [];
  const roundTimes: number[] = [];
  const editTimes: Record<string, number[]> = {};
  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    // Two at a time, as the pool runs them: each edit's time is its own, with one other beside it.
    for (let i = 0; i < EDITS.length; i += 2) {
      await Promise.all(
        EDITS.slice(i, i + 2).map(async (edit) => {
          const image = inputs.get(edit.photo) as Buffer;
          const mask = edit.mask ? await readFile(maskPath(edit)) : undefined;
          const editStarted = performance.now();
          try {
            await pool.edit({ image, prompt: edit.prompt, ...(mask ? { mask } : {}) });
          } catch (error) {
            failures.push(`${edit.name}: ${error instanceof Error ? error.message : String(error)}`);
          }
          editTimes[edit.name] = [...(editTimes[edit.name] ?? []), performance.now() - editStarted];
        }),
      );
    }
    roundTimes.push(performance.now() - started);
    roundPeaks.push(peakMark ? status("VmHWM") : sampledPeak);
  }
  const afterJobs = status("VmRSS");
  await sleep(IDLE_MS);
  const afterIdle = status("VmRSS");
  clearInterval(sampler);
  const peak = peakMark ? status("VmHWM") : sampledPeak;
  await pool.close();
  await sleep(500);
  const afterClose = status("VmRSS");
  const figures: Figures = {
    start,
    floorPeak,
    floorAfter,
    peak,
    sampledPeak,
    roundPeaks,
    roundTimes,
    editTimes,
    failures,
    afterJobs,
    afterIdle,
    afterClose,
  };
  console.log(JSON.stringify(figures));
}

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const load = () => os.loadavg()[0]?.toFixed(2) ?? "?";

async function main(): Promise<void> {
  if (process.argv.includes("--child")) {
    await measure();
    return;
  }
  console.log("\n# Memory at concurrency 2, 12 MP, no learned model\n");
  const settings = ["MALLOC_ARENA_MAX", "UV_THREADPOOL_SIZE", "VIPS_CONCURRENCY"]
    .map((name) => `${name}=${process.env[name] ?? "(unset)"}`)
    .join(", ");
  console.log(`Node ${process.version}, sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}); ${settings}`);
  const loadBefore = load();
  await prepareInputs();
  const output = execFileSync(process.execPath, [await bundle(), "--child"], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
  });
  const figures = JSON.parse(output.trim().split("\n").pop() ?? "{}") as Figures;
  console.log(`1-minute load average ${loadBefore} before, ${load()} after.\n`);
  console.log(
    `${EDITS.length} edits of ${WIDTH}x${HEIGHT} JPEGs (q95, made from fixture photos) per round, ${ROUNDS} rounds, through an EnginePool of 2 threads.\n`,
  );
  console.log("| | RSS |");
  console.log("|---|---|");
  console.log(`| process started (modules loaded) | ${mib(figures.start)} |`);
  console.log(`| floor: peak of decode + encode, two at a time, main thread | ${mib(figures.floorPeak)} |`);
  console.log(`| floor: after it | ${mib(figures.floorAfter)} |`);
  console.log(
    `| **peak during the edits** (per round: ${figures.roundPeaks.map(mib).join(", ")}; sampled every 20 ms: ${mib(figures.sampledPeak)}) | **${mib(figures.peak)}** |`,
  );
  console.log(`| when the last edit has returned | ${mib(figures.afterJobs)} |`);
  console.log(`| **after ${IDLE_MS / 1000} s idle, threads alive** | **${mib(figures.afterIdle)}** |`);
  console.log(`| after the pool is closed | ${mib(figures.afterClose)} |`);
  console.log(`\nTime per round (6 edits, 2 at a time): ${figures.roundTimes.map(seconds).join(", ")}.`);
  console.log("\n| Edit (beside the other of its pair) | Time, median of the rounds |");
  console.log("|---|---|");
  for (const [name, times] of Object.entries(figures.editTimes)) console.log(`| ${name} | ${seconds(median(times))} |`);
  if (figures.failures.length > 0) console.log(`\nRefused or failed: ${figures.failures.join("; ")}`);
}

await main();
