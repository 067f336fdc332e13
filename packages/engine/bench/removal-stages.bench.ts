/**
 * `pnpm bench` (in packages/engine), second part (after engine.bench.ts): where the time of one
 * "remove the person" goes, stage by stage, at 1 MP, on the engine bench's
 * input (a person on gravel, 1224x816) and on basketball.jpg scaled to 1 MP
 * ("the person on the left"). Each stage runs alone here, in the order the
 * engine runs them, except the detector and the segmenter's encoder, which
 * the engine runs side by side (engine.ts, EarlySegmenter): they are timed
 * alone and together. The body keypoints are timed as the engine asks them now
 * (of the detector's thread, kept open and MoveNet loaded in it while the rest
 * ran) and as before (a thread of their own), and the whole edit through the
 * engine both ways, alternating which goes first; then the whole edit as the
 * service runs it (bundled, through an EnginePool, whose vision thread serves
 * the detector and the keypoints and stays up between edits). Median of several runs after
 * a warming run, with the 1-minute load average at each round, since the
 * machine may be shared.
 *
 * `node --import tsx bench/removal-stages.bench.ts [PHOTO WIDTH RUNS]` times one photo;
 * `... removal-stages.bench.ts --as-service` only the whole edits as the service runs them, with the
 * learned inpainter of RETOUCH_BENCH_INPAINTING_MODEL where it is set (bench-inpainting-model.ts).
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { MALLOC_SETTINGS, withMallocSettings } from "../../server/scripts/malloc-settings.mjs";
import {
  type Box,
  type Detection,
  EDIT_STAGES,
  type EditStage,
  type ObjectDetector,
  type RgbaImage,
  type WorkContext,
} from "../src/engine.ports";
import { PatchMatchInpainter } from "../src/inpainting/patch-inpainter";
import { decodeImage, decodeScaled, decodeSquare, encodeImage } from "../src/pixels/image-codec";
import { EnginePool } from "../src/runtime/engine-pool";
import { HumanObjectDetector } from "../src/vision/object-detector.human";
import { type Keypoint, MoveNetPoseEstimator, type PoseEstimator } from "../src/vision/pose-keypoints";
import { encoderInputSize, type ImageEmbedding, MinisamSegmenter, type PromptPoint } from "../src/vision/segmenter.minisam";
import { createImageEngine } from "../src/workflows/engine";
import { DetectAndInpaintRemover } from "../src/workflows/object-removal";
import { bundleBench } from "./bench-bundle";
import { benchInpaintingModel } from "./bench-inpainting-model";
import { median } from "./bench-timing";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, "..", "test", "fixtures");

interface Subject {
  name: string;
  prompt: string;
  term: string;
  bytes: () => Promise<Buffer>;
}

/** The engine bench's "people" input: the astronaut's portrait on gravel. */
async function personOnGravel(): Promise<Buffer> {
  const portrait = await sharp(await readFile(path.join(fixtures, "astronaut.jpg")))
    .resize(360)
    .toBuffer();
  return sharp(await readFile(path.join(fixtures, "gravel.jpg")))
    .resize(1224, 816)
    .composite([{ input: portrait, left: 600, top: 300 }])
    .jpeg({ quality: 92 })
    .toBuffer();
}

const photoAt = (name: string, width: number) => async () =>
  sharp(await readFile(path.join(fixtures, `${name}.jpg`)))
    .resize(width)
    .jpeg({ quality: 92 })
    .toBuffer();

function subjects(): Subject[] {
  const [photo, width] = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
  if (photo) {
    return [
      { name: `${photo} at ${width} px`, prompt: "remove the person", term: "person", bytes: photoAt(photo, Number(width)) },
    ];
  }
  return [
    { name: "person on gravel, 1224x816", prompt: "remove the person", term: "person", bytes: personOnGravel },
    {
      name: "basketball.jpg, 1224 px wide",
      prompt: "remove the person on the left",
      term: "person on the left",
      bytes: photoAt("basketball", 1224),
    },
  ];
}

async function profile(subject: Subject, runs: number): Promise<void> {
  const bytes = await subject.bytes();
  const detector = new HumanObjectDetector();
  const segmenter = new MinisamSegmenter();
  const inpainter = new PatchMatchInpainter();
  const inpainterAlone = new PatchMatchInpainter({ helperThread: false });
  const pose = new MoveNetPoseEstimator();
  const engine = createImageEngine();
  // Before: a detector the engine cannot keep the thread of, so the keypoints start a thread of their own.
  const engineBefore = createImageEngine({
    detector: { labels: detector.labels, inputSize: detector.inputSize, detect: (image, work) => detector.detect(image, work) },
  });
  const context = {};
  const loads: number[] = [];
  const times = new Map<string, number[]>();
  let prompts = 0;
  const record = (name: string, ms: number) => times.set(name, [...(times.get(name) ?? []), ms]);
  const stage = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await run();
    record(name, performance.now() - started);
    return result;
  };
  const encoderSize = (width: number, height: number) => {
    const size = encoderInputSize(width, height);
    return { width: size.scaledWidth, height: size.scaledHeight };
  };
  const scaled = (detections: Detection[], sx: number, sy: number) =>
    detections.map(({ box, ...detection }) => ({
      ...detection,
      box: { x: box.x * sx, y: box.y * sy, width: box.width * sx, height: box.height * sy },
    }));
  const detect = async () => {
    const small = await decodeSquare(bytes, detector.inputSize);
    return scaled(
      await detector.detect(small.image, context),
      small.width / small.image.width,
      small.height / small.image.height,
    );
  };
  // As the engine does for a person removal: the thread stays open, and loads MoveNet, after the detection.
  const detectKeepingThread = async () => {
    const small = await decodeSquare(bytes, detector.inputSize);
    const found = await detector.detectKeepingThread(small.image, context, (all) => all.some((one) => one.label === "person"));
    const sx = small.width / small.image.width;
    const sy = small.height / small.image.height;
    return { detections: scaled(found.detections, sx, sy), thread: found.pose };
  };
  const embed = async () => {
    const scaled = await decodeScaled(bytes, encoderSize);
    return segmenter.embedScaled(scaled.image, scaled, context);
  };
  for (let run = 0; run <= runs; run++) {
    if (run === 1) {
      times.clear();
      loads.length = 0;
    }
    loads.push(os.loadavg()[0] ?? 0);
    await stage("detector: 512² decode, thread start, model load, pass", detect);
    await stage("segmenter's encoder: decode at 1024, pass", embed);
    const [found, embedding] = await stage(
      "both side by side (as the engine runs them; the detector's thread kept for the keypoints)",
      () => Promise.all([detectKeepingThread(), embed()]),
    );
    const image: RgbaImage = await stage("full-size decode", () => decodeImage(bytes));
    if (found.thread) pose.adopt(image, found.thread);
    const fixed: ObjectDetector = { labels: detector.labels, detect: async () => found.detections };
    let asked: Box[] = [];
    let keypointsMs = 0;
    const timedPose: PoseEstimator = {
      keypoints: async (picture: RgbaImage, boxes: readonly Box[], work: WorkContext): Promise<Keypoint[][]> => {
        asked = [...boxes];
        const started = performance.now();
        try {
          return await stage("body keypoints, asked of the detector's thread (now)", () => pose.keypoints(picture, boxes, work));
        } finally {
          keypointsMs += performance.now() - started;
        }
      },
      release: (picture) => pose.release(picture),
    };
    const remover = new DetectAndInpaintRemover(fixed, inpainter, {
      promptable: {
        load: () => segmenter.load(),
        embed: async () => embedding as ImageEmbedding,
        segment: (embedded: ImageEmbedding, box: Detection["box"], points: readonly PromptPoint[], work) => {
          prompts++;
          return stage("one decoder prompt", () => segmenter.segment(embedded, box, points, work));
        },
      },
      pose: timedPose,
    });
    const started = performance.now();
    let mask: RemovalHole;
    try {
      ({ mask } = await remover.maskFromDetections({ image, terms: [subject.term], prompt: subject.prompt }, context));
    } finally {
      found.thread?.close();
    }
    record("the hole: prompts, masks to full size, margins (less the keypoints)", performance.now() - started - keypointsMs);
    await stage("body keypoints in a thread of their own (before)", () => pose.keypoints(image, asked, context));
    const filled = await stage("PatchMatch fill and tone, the search's second band in the helper thread", () =>
      inpainter.inpaint(image, mask, context),
    );
    await stage("PatchMatch fill and tone in one thread (before; the same fill)", () =>
      inpainterAlone.inpaint(image, mask, context),
    );
    await stage("JPEG encode", () => encodeImage(filled, "jpeg"));
    // Alternating which goes first, so that neither always meets the other's leftovers.
    const now = () =>
      stage("**the whole edit through the engine, now**", () => engine.edit({ image: bytes, prompt: subject.prompt }));
    const before = () =>
      stage("the whole edit through the engine, before (a thread for the keypoints)", () =>
        engineBefore.edit({ image: bytes, prompt: subject.prompt }),
      );
    if (run % 2 === 0) await before().then(now);
    else await now().then(before);
  }
  console.log(`\n### ${subject.name}: "${subject.prompt}"\n`);
  console.log(
    `1-minute load average ${Math.min(...loads).toFixed(2)} to ${Math.max(...loads).toFixed(2)} over the rounds; ${prompts / (runs + 1)} decoder prompts per removal.\n`,
  );
  console.log("| Stage | Median |");
  console.log("|---|---|");
  for (const [name, values] of times) console.log(`| ${name} | ${Math.round(median(values))} ms |`);
}

type RemovalHole = Awaited<ReturnType<DetectAndInpaintRemover["maskFromDetections"]>>["mask"];

/**
 * Child mode (`--service FILE PROMPT RUNS`): the whole edit as the service runs it, bundled
 * JavaScript through an EnginePool of one thread (its vision and inference threads warm after
 * the first edit, as in a worker taking jobs); prints the times, and each stage's as the edit
 * reports them (EditResult.stages, what the worker logs), as a JSON line.
 */
async function timeAsService(file: string, prompt: string, runs: number): Promise<void> {
  const bytes = await readFile(file);
  const inpaintingModel = benchInpaintingModel();
  const pool = new EnginePool(1, inpaintingModel ? { inpaintingModel } : {}, { warn: () => {} });
  const times: number[] = [];
  const stages: Partial<Record<EditStage, number[]>> = {};
  for (let run = 0; run <= runs; run++) {
    const started = performance.now();
    const result = await pool.edit({ image: bytes, prompt });
    if (run === 0) continue;
    times.push(performance.now() - started);
    for (const { stage, ms } of result.stages ?? []) stages[stage] = [...(stages[stage] ?? []), ms];
  }
  await pool.close();
  console.log(JSON.stringify({ times, stages, load: os.loadavg()[0] ?? 0 }));
}

/**
 * The same subjects through the service's bundle, each in a child process of its own, under `pnpm start`'s
 * glibc settings (packages/server/scripts/malloc-settings.mjs) and under glibc's defaults: the settings that hold
 * the 12 MP memory make every block of 128 KiB or more a mapping of its own, whose pages are faulted in afresh on
 * each use, and the 1 MP removal pays for it (docs/engine.md).
 */
async function asService(runs: number): Promise<void> {
  const entry = await bundleBench(fileURLToPath(import.meta.url), "removal-stages");
  const directory = await mkdtemp(path.join(os.tmpdir(), "retouch-removal-stages-"));
  const glibcDefaults = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in MALLOC_SETTINGS)));
  const environments = [
    { name: "`pnpm start`'s glibc settings", env: withMallocSettings(process.env) },
    { name: "glibc's defaults", env: glibcDefaults },
  ];
  console.log(
    "\n### The whole edit as the service runs it: bundled, through an EnginePool of 1 (vision and inference threads warm)\n",
  );
  const learned = benchInpaintingModel();
  console.log(`Fill: ${learned ? `${path.basename(learned.path)} (${learned.kind})` : "PatchMatch"}.\n`);
  const served: number[] = [];
  console.log("| Subject | Allocator | Median | Runs | Median by stage | 1-minute load average after |");
  console.log("|---|---|---|---|---|---|");
  for (const subject of subjects()) {
    const file = path.join(directory, `${subject.term.replaceAll(" ", "-")}.jpg`);
    await writeFile(file, await subject.bytes());
    for (const { name, env } of environments) {
      const output = execFileSync(process.execPath, [entry, "--service", file, subject.prompt, String(runs)], {
        env,
        encoding: "utf8",
      });
      const { times, stages, load } = JSON.parse(output.trim().split("\n").pop() ?? "{}") as {
        times: number[];
        stages: Partial<Record<EditStage, number[]>>;
        load: number;
      };
      const all = times.map((ms) => (ms / 1000).toFixed(2)).join(", ");
      const byStage = EDIT_STAGES.flatMap((stage) => {
        const values = stages[stage];
        return values ? [`${stage} ${Math.round(median(values))} ms`] : [];
      }).join(", ");
      console.log(
        `| ${subject.name}, "${subject.prompt}" | ${name} | **${(median(times) / 1000).toFixed(2)} s** | ${all} s | ${byStage} | ${load.toFixed(2)} |`,
      );
      if (env === environments[0]?.env) served.push(median(times));
    }
  }
  const slowest = Math.max(...served) / 1000;
  console.log(
    `\nIssue 23's goal: a 1 MP removal in at most 2 s on two cores; as the service runs it, under \`pnpm start\`'s settings: medians ${served.map((ms) => (ms / 1000).toFixed(2)).join(" and ")} s (${slowest <= 2 ? "within" : "over"}).`,
  );
  await rm(directory, { recursive: true, force: true });
}

const service = process.argv.indexOf("--service");
if (service >= 0) {
  const [file, prompt, count] = process.argv.slice(service + 1);
  await timeAsService(file ?? "", prompt ?? "", Number(count ?? 5));
} else if (process.argv.includes("--as-service")) {
  await asService(5);
} else {
  console.log("\n## Object removal at 1 MP, stage by stage\n");
  console.log(`${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, Node ${process.version}`);
  const runs = Number(process.argv[4] ?? 5);
  for (const subject of subjects()) await profile(subject, runs);
  await asService(runs);
}
