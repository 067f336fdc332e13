/**
 * `pnpm bench` (in packages/core): how long each workflow takes at 1 MP and
 * 12 MP next to a plain decode + encode of the same image (the floor), the
 * peak memory of each, and the quality figures: mean IoU of background
 * removal on the synthetic set, and inpainting error against a flat fill.
 *
 * Each timed case runs in its own child process, so its peak RSS is its own.
 * Timings are the median of several runs after a first, warming run (which
 * loads the models).
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import type { OutputFormat, RgbaImage } from "../src/engine.ports";
import { diffusionFill, PatchMatchInpainter } from "../src/inpainting/patch-inpainter";
import { decodeImage, encodeImage } from "../src/pixels/image-codec";
import { dilate } from "../src/pixels/mask-ops";
import { ClassicalBackgroundRemover } from "../src/workflows/background-removal.classical";
import { createImageEngine } from "../src/workflows/engine";
import {
  alphaOf,
  flatFill,
  iou,
  maskedError,
  productScenes,
  rectangleMask,
  stripes,
  textureEnergy,
} from "../test/synthetic-scenes.fixture";
import { timed } from "./bench-timing";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, "..", "test", "fixtures");
const workDirectory = path.join(os.tmpdir(), "retouch-bench");

interface Case {
  workflow: string;
  prompt: string;
  input: "product" | "people";
  /** The workflow's output format, used for the floor too. */
  format: OutputFormat;
}

const CASES: Case[] = [
  { workflow: "background removal", prompt: "remove the background", input: "product", format: "png" },
  { workflow: "object removal (detect + segment + inpaint)", prompt: "remove the person", input: "people", format: "jpeg" },
  {
    workflow: "generative: 3 adjustments",
    prompt: "make it warmer, add more contrast and sharpen slightly",
    input: "product",
    format: "jpeg",
  },
  { workflow: "generative: white background", prompt: "put it on a white background", input: "product", format: "jpeg" },
  { workflow: "generative: blur the faces (detect + blur)", prompt: "blur the faces", input: "people", format: "jpeg" },
  {
    workflow: "background removal + drop shadow",
    prompt: "remove the background and add a drop shadow",
    input: "product",
    format: "png",
  },
];

const SIZES = [
  { name: "1 MP", width: 1224, height: 816, runs: 5 },
  { name: "12 MP", width: 4240, height: 2832, runs: 3 },
];

/** The inputs, written once as JPEG: a product shot, and a person on gravel, at each size. */
async function prepareInputs(): Promise<void> {
  await mkdir(workDirectory, { recursive: true });
  const [product] = await productScenes(816, [2]);
  const portrait = await sharp(await readFile(path.join(fixtures, "astronaut.jpg")))
    .resize(360)
    .toBuffer();
  const people = await sharp(await readFile(path.join(fixtures, "gravel.jpg")))
    .resize(1224, 816)
    .composite([{ input: portrait, left: 600, top: 300 }])
    .jpeg({ quality: 92 })
    .toBuffer();
  for (const size of SIZES) {
    for (const [name, source] of [
      ["product", product?.jpeg],
      ["people", people],
    ] as const) {
      const bytes = await sharp(source).resize(size.width, size.height, { fit: "fill" }).jpeg({ quality: 92 }).toBuffer();
      await writeFile(path.join(workDirectory, `${name}-${size.width}.jpg`), bytes);
    }
  }
}

/** Child mode: one case, one size; prints a JSON line. */
async function runCase(caseIndex: number, width: number, runs: number): Promise<void> {
  const benchCase = CASES[caseIndex] as Case;
  const bytes = await readFile(path.join(workDirectory, `${benchCase.input}-${width}.jpg`));
  const engine = createImageEngine();
  await engine.warmUp?.();
  const idleRss = process.resourceUsage().maxRSS * 1024;
  // Peak memory of one edit, before repeated runs add garbage-collection lag to it.
  await engine.edit({ image: bytes, prompt: benchCase.prompt });
  const peakRss = process.resourceUsage().maxRSS * 1024;
  const time = await timed(() => engine.edit({ image: bytes, prompt: benchCase.prompt }), runs);
  const floor = await timed(async () => encodeImage(await decodeImage(bytes), benchCase.format), runs);
  console.log(JSON.stringify({ time, floor, idleRss, peakRss }));
}

function childResult(
  caseIndex: number,
  width: number,
  runs: number,
): { time: number; floor: number; idleRss: number; peakRss: number } {
  const output = execFileSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), "--case", String(caseIndex), String(width), String(runs)],
    {
      encoding: "utf8",
      maxBuffer: 1 << 20,
    },
  );
  const line = output.trim().split("\n").pop() ?? "{}";
  return JSON.parse(line);
}

function seconds(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

async function qualityFigures(): Promise<void> {
  console.log("\n## Quality\n");
  const remover = new ClassicalBackgroundRemover();
  const scenes = await productScenes(480);
  const scores: number[] = [];
  console.log("| Synthetic product scene (600x480, JPEG q88) | IoU of alpha >= 50% with the truth |");
  console.log("|---|---|");
  for (const scene of scenes) {
    const score = iou(alphaOf(await remover.removeBackground(await decodeImage(scene.jpeg), {})), scene.truth);
    scores.push(score);
    console.log(`| ${scene.name} | ${score.toFixed(4)} |`);
  }
  console.log(`| **mean** | **${(scores.reduce((a, b) => a + b, 0) / scores.length).toFixed(4)}** |`);

  const inpainter = new PatchMatchInpainter();
  const load = async (name: string): Promise<RgbaImage> => decodeImage(await readFile(path.join(fixtures, name)));
  const cases: [string, RgbaImage, ReturnType<typeof rectangleMask>][] = [];
  const stripeImage = stripes(480, 360, 32);
  cases.push(["synthetic stripes 480x360, hole 120x110", stripeImage, rectangleMask(480, 360, 180, 120, 120, 110)]);
  const brick = await load("brick.jpg");
  cases.push(["brick wall photo 320x256, hole 70x70", brick, rectangleMask(brick.width, brick.height, 120, 90, 70, 70)]);
  const gravel = await load("gravel.jpg");
  cases.push(["gravel photo 320x256, hole 70x70", gravel, rectangleMask(gravel.width, gravel.height, 120, 90, 70, 70)]);
  console.log(
    "\n| Hole filled in | MSE PatchMatch | MSE diffusion | MSE flat fill | PatchMatch / flat | texture energy PatchMatch / diffusion / flat (surroundings = 1) |",
  );
  console.log("|---|---|---|---|---|---|");
  for (const [name, image, mask] of cases) {
    const patch = await inpainter.inpaint(image, mask, {});
    const diffusion = diffusionFill(image, mask);
    const flat = flatFill(image, mask);
    const ring = dilate(mask.data, image.width, image.height, 20).map((value, i) => (value && !mask.data[i] ? 255 : 0));
    const around = textureEnergy(image, { data: ring });
    const energy = (result: RgbaImage) => (textureEnergy(result, mask) / around).toFixed(2);
    const mse = [patch, diffusion, flat].map((result) => maskedError(result, image, mask));
    console.log(
      `| ${name} | ${mse[0]?.toFixed(0)} | ${mse[1]?.toFixed(0)} | ${mse[2]?.toFixed(0)} | ${((mse[0] ?? 0) / (mse[2] ?? 1)).toFixed(2)} | ${energy(patch)} / ${energy(diffusion)} / ${energy(flat)} |`,
    );
  }
}

async function main(): Promise<void> {
  const caseFlag = process.argv.indexOf("--case");
  if (caseFlag >= 0) {
    const [caseIndex, width, runs] = process.argv.slice(caseFlag + 1).map(Number);
    await runCase(caseIndex ?? 0, width ?? 0, runs ?? 1);
    return;
  }
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  console.log("# Retouch engine bench\n");
  console.log(
    `Machine: ${cpu}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${os.type()} ${os.release()}`,
  );
  console.log(
    `Node ${process.version}, sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}), libvips threads: ${sharp.concurrency()}\n`,
  );
  await prepareInputs();
  console.log("## Speed (median; floor = decode + encode of the same image to the same format)\n");
  console.log("| Workflow | Size | Time | Floor | Ratio | Peak RSS of one edit (before it) |");
  console.log("|---|---|---|---|---|---|");
  for (const size of SIZES) {
    for (const [index, benchCase] of CASES.entries()) {
      const result = childResult(index, size.width, size.runs);
      console.log(
        `| ${benchCase.workflow} | ${size.name} (${size.width}x${size.height}) | ${seconds(result.time)} | ${seconds(result.floor)} | ${(result.time / result.floor).toFixed(1)}x | ${Math.round(result.peakRss / 2 ** 20)} MiB (${Math.round(result.idleRss / 2 ** 20)} MiB) |`,
      );
    }
  }
  await qualityFigures();
}

await main();
