/**
 * `pnpm bench` (in packages/core), third part: the memory of a worker at
 * concurrency 2 on 12 MP photos with no learned model, as the service runs
 * edits: through an EnginePool of two threads, two edits at a time.
 *
 * One child process (so that its RSS is its own) decodes and encodes the
 * photos to the edits' formats, two at a time: the floor, what any two 12 MP
 * edits cost. Another (a floor run first in the same process left ~60 MB
 * behind that would count as the pool's) gives the pool a mix of six edits at
 * once (classical background removal, object removal of a detected person, of
 * detected boats and of a masked area, black and white, blur the background),
 * three rounds over. It reports the peak of each round (the kernel's VmHWM,
 * checked against a sample of RSS every 20 ms), the RSS when the last edit has
 * returned, after the pool has stood idle a few seconds (threads alive, as in
 * a worker between jobs) and after the pool is closed; and the time of a round
 * next to the floor's. Which steps of two edits meet decides a peak, so it
 * varies from round to round and run to run (about ±30 MB).
 *
 * The child runs a bundle of this file and of the engine's threads
 * (bench-bundle.ts), as the service runs them.
 *
 * It runs twice: under the glibc allocator settings that `pnpm start` sets
 * (packages/server/scripts/malloc-settings.mjs; a value in the environment
 * wins, so others can be tried: `MALLOC_ARENA_MAX=4 pnpm bench`), and under
 * glibc's defaults.
 *
 * Then once more under `pnpm start`'s settings with the learned background
 * model (IS-Net, the test weights of scripts/fetch-test-models.ts, at the
 * catalog's 704) beside the promptable segmenter (on by default): issue 23's
 * worker at concurrency 2 running 12 MP cut-outs and removals, whose peak is
 * held to 1 GiB. The cut-outs and the blurred background then go through
 * IS-Net.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { fetchIsnetModel } from "../../../scripts/fetch-test-models";
import { grainyPhoto } from "../../../test/support/large-images";
import { MALLOC_SETTINGS, withMallocSettings } from "../../server/scripts/malloc-settings.mjs";
import type { OutputFormat } from "../src/engine.ports";
import { decodeImage, encodeImage } from "../src/pixels/image-codec";
import { EnginePool } from "../src/runtime/engine-pool";
import { bundleBench } from "./bench-bundle";
import { benchInpaintingModel } from "./bench-inpainting-model";

const fixtures = new URL("../test/fixtures/", import.meta.url);
const workDirectory = path.join(os.tmpdir(), "retouch-bench-memory");
const WIDTH = 4000;
const HEIGHT = 3000;
const ROUNDS = 3;
/** How long the pool stands idle before "after" is read again. */
const IDLE_MS = 5_000;

type Photo = "coffee" | "astronaut" | "boats" | "basketball";
const PHOTOS: Photo[] = ["coffee", "astronaut", "boats"];

interface Edit {
  name: string;
  photo: Photo;
  prompt: string;
  /** What the edit answers with; the floor encodes to the same. */
  format: OutputFormat;
  /** A white rectangle (x, y, width, height as fractions of the frame) to remove. */
  mask?: [number, number, number, number];
}

/** One round, submitted at once, in this order: the pool runs two at a time, as a worker's queue hands it jobs. */
const EDITS: Edit[] = [
  { name: "background removal (classical)", photo: "coffee", prompt: "remove the background", format: "png" },
  { name: "remove the person (detect + inpaint)", photo: "astronaut", prompt: "remove the person", format: "jpeg" },
  { name: "blur the background", photo: "coffee", prompt: "blur the background", format: "jpeg" },
  { name: "black and white", photo: "boats", prompt: "make it black and white", format: "jpeg" },
  {
    name: "remove a masked area",
    photo: "coffee",
    prompt: "remove the object",
    format: "jpeg",
    mask: [0.38, 0.33, 0.2, 0.2],
  },
  { name: "remove the boats (detect + inpaint)", photo: "boats", prompt: "remove the boats", format: "jpeg" },
];

/**
 * With RETOUCH_BENCH_MIXED=1, each 12 MP edit of a round is followed by this 1 MP removal: a learned inpainter fills
 * pictures up to 4 MP only, so its passes then run beside 12 MP frames, as in a worker of mixed sizes.
 */
const MIXED = process.env.RETOUCH_BENCH_MIXED === "1";
const SMALL: Edit = {
  name: "remove the person on the left (basketball, 1224x918)",
  photo: "basketball",
  prompt: "remove the person on the left",
  format: "jpeg",
};
const roundEdits = (): Edit[] => (MIXED ? EDITS.flatMap((edit) => [edit, SMALL]) : EDITS);

const inputPath = (name: Photo) => path.join(workDirectory, name === SMALL.photo ? `${name}-1224.jpg` : `${name}-${WIDTH}.jpg`);
const maskPath = (edit: Edit) => path.join(workDirectory, `mask-${(edit.mask ?? []).join("-")}.png`);

/** 12 MP camera-like JPEGs (q95, sensor-like grain) made from fixture photos, and the masks. */
async function prepareInputs(): Promise<void> {
  await mkdir(workDirectory, { recursive: true });
  for (const photo of PHOTOS) {
    const image = await grainyPhoto(WIDTH, HEIGHT, 6, new URL(`${photo}.jpg`, fixtures));
    await writeFile(inputPath(photo), await image.jpeg({ quality: 95 }).toBuffer());
  }
  const basketball = sharp(new URL("basketball.jpg", fixtures).pathname).resize(1224);
  await writeFile(inputPath(SMALL.photo), await basketball.jpeg({ quality: 92 }).toBuffer());
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

interface FloorFigures {
  start: number;
  time: number;
  peak: number;
  after: number;
}

interface EditFigures {
  start: number;
  peak: number;
  sampledPeak: number;
  roundPeaks: number[];
  roundTimes: number[];
  failures: string[];
  afterJobs: number;
  afterIdle: number;
  afterClose: number;
}

interface Figures {
  floor: FloorFigures;
  edits: EditFigures;
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const readInputs = async () =>
  new Map(await Promise.all([...PHOTOS, SMALL.photo].map(async (photo) => [photo, await readFile(inputPath(photo))] as const)));

/** Child mode, the floor: the same images decoded and encoded to the same formats, two at a time; prints a JSON line. */
async function measureFloor(): Promise<void> {
  const inputs = await readInputs();
  const start = status("VmRSS");
  const started = performance.now();
  for (let i = 0; i < EDITS.length; i += 2) {
    await Promise.all(
      EDITS.slice(i, i + 2).map(async (edit) => encodeImage(await decodeImage(inputs.get(edit.photo) as Buffer), edit.format)),
    );
  }
  const floor: FloorFigures = { start, time: performance.now() - started, peak: status("VmHWM"), after: status("VmRSS") };
  console.log(JSON.stringify(floor));
}

/** A learned inpainter for the learned run's removals (bench-inpainting-model.ts); PatchMatch without. */
const inpaintingModel = benchInpaintingModel();

/** Child mode, the edits through the pool; prints a JSON line. With `--learned PATH`, IS-Net at 704 does the cut-outs. */
async function measureEdits(learned: string | undefined): Promise<void> {
  const inputs = await readInputs();
  const start = status("VmRSS");
  let sampledPeak = 0;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, process.memoryUsage.rss());
  }, 20);
  const pool = new EnginePool(
    2,
    learned ? { backgroundModel: { path: learned, inputSize: 704 }, ...(inpaintingModel ? { inpaintingModel } : {}) } : {},
    { warn: () => {} },
  );
  const roundPeaks: number[] = [];
  const roundTimes: number[] = [];
  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const peakMark = resetPeak();
    const started = performance.now();
    await Promise.all(
      roundEdits().map(async (edit) => {
        const image = inputs.get(edit.photo) as Buffer;
        const mask = edit.mask ? await readFile(maskPath(edit)) : undefined;
        try {
          await pool.edit({ image, prompt: edit.prompt, ...(mask ? { mask } : {}) });
        } catch (error) {
          failures.push(`${edit.name}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }),
    );
    roundTimes.push(performance.now() - started);
    roundPeaks.push(peakMark ? status("VmHWM") : sampledPeak);
  }
  const afterJobs = status("VmRSS");
  await sleep(IDLE_MS);
  const afterIdle = status("VmRSS");
  clearInterval(sampler);
  await pool.close();
  await sleep(500);
  const figures: EditFigures = {
    start,
    peak: Math.max(...roundPeaks),
    sampledPeak,
    roundPeaks,
    roundTimes,
    failures,
    afterJobs,
    afterIdle,
    afterClose: status("VmRSS"),
  };
  console.log(JSON.stringify(figures));
}

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const load = () => os.loadavg()[0]?.toFixed(2) ?? "?";

/** The floor and the edits, each in a child process of its own with this environment. */
function measureIn(entry: string, env: NodeJS.ProcessEnv, learned?: string): Figures {
  const child = (...mode: string[]) => {
    const output = execFileSync(process.execPath, [entry, ...mode], { env, encoding: "utf8", maxBuffer: 1 << 20 });
    return JSON.parse(output.trim().split("\n").pop() ?? "{}");
  };
  return {
    floor: child("--floor") as FloorFigures,
    edits: child("--edits", ...(learned ? ["--learned", learned] : [])) as EditFigures,
  };
}

async function main(): Promise<void> {
  if (process.argv.includes("--floor")) {
    await measureFloor();
    return;
  }
  if (process.argv.includes("--edits")) {
    const learned = process.argv.indexOf("--learned");
    await measureEdits(learned >= 0 ? process.argv[learned + 1] : undefined);
    return;
  }
  console.log("\n# Memory at concurrency 2, 12 MP: without a learned background model, then with IS-Net\n");
  console.log(
    `Node ${process.version}, sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}), ${os.cpus().length} cores`,
  );
  const loadBefore = load();
  await prepareInputs();
  const entry = await bundleBench(fileURLToPath(import.meta.url), "memory-bench");
  const isnet = await fetchIsnetModel();
  const glibcDefaults = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in MALLOC_SETTINGS)));
  // `--learned-only`: only issue 23's configuration (a third of the time).
  const learnedOnly = process.argv.includes("--learned-only");
  const runs = [
    ...(learnedOnly
      ? []
      : [
          { name: "glibc settings of `pnpm start`", figures: measureIn(entry, withMallocSettings(process.env)) },
          { name: "glibc defaults", figures: measureIn(entry, glibcDefaults) },
        ]),
    {
      name: `**IS-Net + segmenter${inpaintingModel ? ` + ${path.basename(inpaintingModel.path)}` : ""}**, \`pnpm start\`'s settings`,
      figures: measureIn(entry, withMallocSettings(process.env), isnet),
    },
  ];
  console.log(`1-minute load average ${loadBefore} before, ${load()} after.\n`);
  const settings = Object.entries(withMallocSettings(process.env))
    .filter(([name]) => name in MALLOC_SETTINGS)
    .map(([name, value]) => `${name}=${value}`)
    .join(", ");
  console.log(
    `${EDITS.length} edits of ${WIDTH}x${HEIGHT} JPEGs (q95, made from fixture photos) per round${MIXED ? `, each followed by ${SMALL.name} (RETOUCH_BENCH_MIXED)` : ""}, ${ROUNDS} rounds, through an EnginePool of 2 threads; \`pnpm start\`'s settings: ${settings}.\n`,
  );
  const row = (label: string, value: (figures: Figures) => string) =>
    console.log(`| ${label} | ${runs.map((run) => value(run.figures)).join(" | ")} |`);
  console.log(`| RSS | ${runs.map((run) => run.name).join(" | ")} |`);
  console.log(`|---|${runs.map(() => "---|").join("")}`);
  row("floor: process started (modules loaded)", ({ floor }) => mib(floor.start));
  row("floor: peak of decode + encode of the same images, two at a time", ({ floor }) => mib(floor.peak));
  row("floor: after it", ({ floor }) => mib(floor.after));
  row("edits: process started (modules loaded)", ({ edits }) => mib(edits.start));
  row("**edits: peak**", ({ edits }) => `**${mib(edits.peak)}**`);
  row("edits: peak over the floor's peak", ({ floor, edits }) => mib(edits.peak - floor.peak));
  row("edits: peak by round", ({ edits }) => edits.roundPeaks.map(mib).join(", "));
  row("edits: peak of RSS sampled every 20 ms", ({ edits }) => mib(edits.sampledPeak));
  row("edits: when the last edit has returned", ({ edits }) => mib(edits.afterJobs));
  row(`**edits: after ${IDLE_MS / 1000} s idle, threads alive**`, ({ edits }) => `**${mib(edits.afterIdle)}**`);
  row("edits: after the pool is closed", ({ edits }) => mib(edits.afterClose));
  console.log(`\n| Time, the whole round | ${runs.map((run) => run.name).join(" | ")} |`);
  console.log(`|---|${runs.map(() => "---|").join("")}`);
  row("floor: decode + encode of the same 6 images, two at a time", ({ floor }) => seconds(floor.time));
  row(`the ${roundEdits().length} edits, by round`, ({ floor, edits }) =>
    edits.roundTimes.map((time) => `${seconds(time)} (${(time / floor.time).toFixed(0)}x)`).join(", "),
  );
  for (const run of runs) {
    const { failures } = run.figures.edits;
    // Each edit fails the same way every round: once each, with the count.
    const counts = new Map<string, number>();
    for (const failure of failures) counts.set(failure, (counts.get(failure) ?? 0) + 1);
    const listed = [...counts].map(([failure, count]) => `${failure} (${count} of ${ROUNDS} rounds)`);
    if (listed.length > 0) console.log(`\nRefused or failed (${run.name}): ${listed.join("; ")}`);
  }
  const learned = runs.at(-1)?.figures.edits.peak ?? 0;
  console.log(
    `\nIssue 23's goal for a worker at concurrency 2 with the learned model and the segmenter: a peak of at most 1 GiB; measured ${mib(learned)} (${learned <= 2 ** 30 ? "within" : "over"}).`,
  );
}

await main();
