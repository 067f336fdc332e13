/**
 * `pnpm quality` (at the root, or in packages/engine): background removal on the real
 * photographs in test/fixtures, through the engine as a job runs it, (a) with
 * the classical segmenter (the engine's default when no model is configured), which
 * refuses the pictures its plausibility check does not pass, (b) the same segmenter
 * made to answer everything (what the check refused would have looked like), and
 * (c) with the IS-Net weights through the ONNX path (scripts/fetch-test-models.ts
 * fetches them once). Prints, per photo, the IoU of each cut-out's alpha (≥ 0.5)
 * against the reference matte, a verdict (clean ≥ 0.95, usable ≥ 0.85, poor ≥ 0.5,
 * failed) or "refused", the bounds of the plausibility check the photo breaks, and
 * the time of the edit; then the medians and the count per verdict and of refusals.
 * Landscapes have no matte: the share of the picture each cut-out kept is printed
 * instead.
 *
 *     pnpm quality [--threads N] [--size N] [PHOTO ...]
 *
 * --threads: onnxruntime threads per inference (default: every core, as the service's
 * inference thread). --size: IS-Net's input side (default 704, as the service runs it; 768 or 1024 (as published) for more cores; the
 * published model is resized, see src/models/model-input-size.ts).
 */
import os from "node:os";
import { parseArgs } from "node:util";
import { fetchIsnetModel } from "../../../scripts/fetch-test-models";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { ClassicalBackgroundRemover } from "../src/workflows/background-removal.classical";
import { createImageEngine } from "../src/workflows/engine";
import { cutOut, loadMatte, loadPhoto, median, REAL_PHOTOS, type Score, score, type Verdict } from "../test/real-photos.fixture";

const { values, positionals } = parseArgs({
  options: { threads: { type: "string", default: String(os.availableParallelism()) }, size: { type: "string", default: "704" } },
  allowPositionals: true,
});
const threads = Number(values.threads);
const inputSize = Number(values.size);
const photos = positionals.length ? REAL_PHOTOS.filter((photo) => positionals.includes(photo.name)) : REAL_PHOTOS;

const modelPath = await fetchIsnetModel();
const classicalRemover = new ClassicalBackgroundRemover();
const engines = {
  classical: createImageEngine(),
  unchecked: createImageEngine({ backgroundRemover: new ClassicalBackgroundRemover({ plausibilityCheck: false }) }),
  isnet: createImageEngine({
    backgroundModel: { path: modelPath, kind: "isnet", inputSize },
    onnxRunner: new LocalOnnxRunner({ threads }),
  }),
};
await engines.isnet.warmUp?.();

interface Row {
  name: string;
  kind: string;
  results: Record<keyof typeof engines, Score & { milliseconds: number; refusal: string | undefined }>;
  hasMatte: boolean;
  /** The plausibility bounds the classical result breaks. */
  broken: string[];
}

const rows: Row[] = [];
for (const photo of photos) {
  const bytes = await loadPhoto(photo.name);
  const matte = photo.subject ? (await loadMatte(photo.name)).data : undefined;
  const results = {} as Row["results"];
  for (const [name, engine] of Object.entries(engines) as [keyof typeof engines, (typeof engines)[keyof typeof engines]][]) {
    const cut = await cutOut(engine, bytes);
    results[name] = { ...score(cut, matte), milliseconds: cut.milliseconds, refusal: cut.refusal };
  }
  const broken = (await classicalRemover.assess(await decodeImage(bytes))).broken.map((bound) => bound.measure);
  rows.push({ name: photo.name, kind: photo.kind, results, hasMatte: matte !== undefined, broken });
  const { classical, unchecked, isnet } = results;
  console.error(
    `${photo.name}: classical ${classical.refusal ?? classical.iou.toFixed(3)} (unchecked ${unchecked.iou.toFixed(3)}), IS-Net ${isnet.iou.toFixed(3)}`,
  );
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
function cell(result: Row["results"][keyof typeof engines], hasMatte: boolean): string {
  if (result.refusal === "model_unavailable") return "refused";
  if (result.refusal) return `refused (${result.refusal})`;
  if (!hasMatte) return `kept ${(100 * result.kept).toFixed(0)}%`;
  return `${result.iou.toFixed(3)} ${result.verdict}`;
}

const [cpu] = os.cpus();
console.log(
  `Machine: ${cpu?.model ?? "unknown CPU"}, ${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((load) => load.toFixed(1))
    .join(" / ")}; Node ${process.version}; IS-Net at ${inputSize}x${inputSize}, ${threads} thread(s)\n`,
);
console.log(
  "| Photo | Kind | Classical IoU (no model) | Bounds broken | Classical answering everything | IS-Net IoU | Classical time | IS-Net time |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const row of rows) {
  const { classical, unchecked, isnet } = row.results;
  console.log(
    `| ${row.name} | ${row.kind} | ${cell(classical, row.hasMatte)} | ${row.broken.join(", ") || "none"} | ${cell(unchecked, row.hasMatte)} | ${cell(isnet, row.hasMatte)} | ${seconds(classical.milliseconds)} | ${seconds(isnet.milliseconds)} |`,
  );
}
const scored = rows.filter((row) => row.hasMatte);
/** Median IoU and verdicts of the answered cut-outs, and how many were refused. */
const summary = (name: keyof typeof engines) => {
  const answered = scored.filter((row) => !row.results[name].refusal);
  const counts: Record<Verdict, number> = { clean: 0, usable: 0, poor: 0, failed: 0 };
  for (const row of answered) counts[row.results[name].verdict]++;
  const refused = scored.length - answered.length;
  const median_ = answered.length ? median(answered.map((row) => row.results[name].iou)).toFixed(3) : "-";
  return `${answered.length} answered, median ${median_} (${counts.clean} clean, ${counts.usable} usable, ${counts.poor} poor, ${counts.failed} failed); ${refused} refused`;
};
const refusedLandscapes = (name: keyof typeof engines) => rows.filter((row) => !row.hasMatte && row.results[name].refusal).length;
console.log(
  `| **${scored.length} with a matte** | | ${summary("classical")} | | ${summary("unchecked")} | ${summary("isnet")} | ${seconds(median(rows.map((row) => row.results.classical.milliseconds)))} | ${seconds(median(rows.map((row) => row.results.isnet.milliseconds)))} |`,
);
console.log(
  `\nLandscapes (no matte) refused: classical ${refusedLandscapes("classical")}, answering everything ${refusedLandscapes("unchecked")}, IS-Net ${refusedLandscapes("isnet")} of ${rows.length - scored.length}.`,
);
