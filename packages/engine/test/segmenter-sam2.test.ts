import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { Detection, ObjectDetector, RgbaImage } from "../src/engine.ports";
import { EngineError } from "../src/engine-error";
import { PointSelector } from "../src/vision/point-selection";
import { embeddingBytes } from "../src/vision/segmenter.minisam";
import { Sam2Segmenter } from "../src/vision/segmenter.sam2";
import { promptableSegmenter, promptableSegmenterSpecs } from "../src/vision/segmenter-choice";
import { createImageEngine } from "../src/workflows/engine";
import { tinySam2Decoder, tinySam2Encoder } from "./onnx-model.builder";
import { RecordingRunner } from "./recording-runner";

/**
 * SAM 2.1 as samexporter exports it (segmenter.sam2.ts), wired to tiny models
 * of the same contract (onnx-model.builder.ts): the real export cannot be
 * fetched here. What the runner is fed says how the picture was prepared and
 * how prompts were placed; the tiny decoder's mask is the prompted box, so the
 * mask says how the logits were brought back to the picture.
 */

const WIDTH = 256;
const HEIGHT = 128;
let dir: string;
let encoderPath: string;
let decoderPath: string;
let nanEncoderPath: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "retouch-sam2-"));
  encoderPath = path.join(dir, "sam2-encoder.onnx");
  decoderPath = path.join(dir, "sam2-decoder.onnx");
  nanEncoderPath = path.join(dir, "sam2-encoder-nan.onnx");
  await writeFile(encoderPath, tinySam2Encoder());
  await writeFile(decoderPath, tinySam2Decoder());
  await writeFile(nanEncoderPath, tinySam2Encoder({ nan: true }));
});

/** Left half black, right half white: 256 x 128. */
async function halves(): Promise<Buffer> {
  const data = new Uint8Array(WIDTH * HEIGHT * 4).fill(255);
  for (let y = 0; y < HEIGHT; y++) data.fill(0, y * WIDTH * 4, (y * WIDTH + WIDTH / 2) * 4);
  for (let i = 3; i < data.length; i += 4) data[i] = 255;
  return sharp(data, { raw: { width: WIDTH, height: HEIGHT, channels: 4 } })
    .png()
    .toBuffer();
}

function share(mask: Uint8Array, width: number, rect: { x0: number; y0: number; x1: number; y1: number }) {
  let inside = 0;
  let outside = 0;
  for (let i = 0; i < mask.length; i++) {
    if (!mask[i]) continue;
    const x = i % width;
    const y = Math.floor(i / width);
    if (x >= rect.x0 && x < rect.x1 && y >= rect.y0 && y < rect.y1) inside++;
    else outside++;
  }
  return { inside, outside, area: (rect.x1 - rect.x0) * (rect.y1 - rect.y0) };
}

describe("SAM 2.1 (samexporter's contract)", () => {
  it("stretches the picture to 1024² with ImageNet's normalisation and carries the encoder's three outputs", async () => {
    const runner = new RecordingRunner();
    const segmenter = new Sam2Segmenter({ encoderPath, decoderPath, runner });
    const embedding = await segmenter.embedEncoded(await halves(), 10_000_000, {});

    const fed = runner.fedTo(encoderPath)[0]?.image;
    expect(fed?.dims).toEqual([1, 3, 1024, 1024]);
    const data = fed?.data as Float32Array;
    // Stretched, not padded: the black half fills the left 512 columns of every row, the white half the rest.
    expect(data[1023 * 1024 + 100]).toBeCloseTo((0 - 123.675) / 58.395, 3);
    expect(data[1023 * 1024 + 900]).toBeCloseTo((255 - 123.675) / 58.395, 3);
    expect(data[2 * 1024 * 1024 + 5 * 1024 + 900]).toBeCloseTo((255 - 103.53) / 57.375, 3);

    expect(embedding.dims).toEqual([1, 256, 64, 64]);
    expect(embedding.features?.high_res_feats_0?.dims).toEqual([1, 32, 256, 256]);
    expect(embedding.features?.high_res_feats_1?.dims).toEqual([1, 64, 128, 128]);
    expect(embedding.features?.high_res_feats_1?.data[0]).toBe(2);
    // The masks come out at the picture's own aspect, longest side 1024, as SAM 1's do.
    expect(embedding).toMatchObject({ width: WIDTH, height: HEIGHT, scaledWidth: 1024, scaledHeight: 512, scale: 4 });
    // Click-to-select's cache counts the feature maps too: about 17 MB, not SAM 1's 4.
    expect(embeddingBytes(embedding)).toBe(4 * (256 * 64 * 64 + 32 * 256 * 256 + 64 * 128 * 128));
  });

  it("places a box in the stretched frame without a padding point and brings the best mask back to the picture", async () => {
    const runner = new RecordingRunner();
    const segmenter = new Sam2Segmenter({ encoderPath, decoderPath, runner });
    const embedding = await segmenter.embedEncoded(await halves(), 10_000_000, {});
    const box = { x: 64, y: 32, width: 64, height: 64 };
    const result = await segmenter.segment(embedding, box, [], {});

    const fed = runner.fedTo(decoderPath)[0];
    expect(fed?.point_coords?.dims).toEqual([1, 2, 2]);
    // x by 1024/256, y by 1024/128: the frame is stretched, each axis on its own.
    expect([...(fed?.point_coords?.data ?? [])]).toEqual([256, 256, 512, 768]);
    expect([...(fed?.point_labels?.data ?? [])]).toEqual([2, 3]);
    expect(fed?.high_res_feats_0?.dims).toEqual([1, 32, 256, 256]);
    expect(fed?.has_mask_input?.data[0]).toBe(0);
    expect(Object.keys(fed ?? {})).not.toContain("orig_im_size");

    // The mask rated 0.9 of three, at the picture's aspect (1024 x 512): the box at 4 encoder pixels per pixel.
    expect(result.predictedIou).toBeCloseTo(0.9, 5);
    expect(result.mask).toMatchObject({ width: 1024, height: 512 });
    expect(result.scale).toBe(4);
    const { inside, outside, area } = share(result.mask.data, 1024, { x0: 256, y0: 128, x1: 512, y1: 384 });
    expect(inside / area).toBeGreaterThan(0.97);
    expect(outside / area).toBeLessThan(0.03);
  });

  it("selects by clicks through the pool's point selector, the points alone in the prompt", async () => {
    const runner = new RecordingRunner();
    const segmenter = promptableSegmenter({ segmenterModel: { kind: "sam2", encoderPath, decoderPath } }, runner);
    expect(segmenter).toBeInstanceOf(Sam2Segmenter);
    const selector = new PointSelector(segmenter as Sam2Segmenter);
    const embedding = await selector.embed(await halves());
    const selection = await selector.select(embedding, [
      { x: 50, y: 20, include: true },
      { x: 200, y: 100, include: false },
    ]);
    const fed = runner.fedTo(decoderPath).at(-1);
    expect(fed?.point_coords?.dims).toEqual([1, 2, 2]);
    expect([...(fed?.point_labels?.data ?? [])]).toEqual([1, 0]);
    expect(selection).toMatchObject({ width: 1024, height: 512, predictedIou: expect.closeTo(0.9, 5) });
    // The tiny decoder's box from the first point to the last: (200, 160) to (800, 800) in the 1024 frame, y halved here.
    const { data, info } = await sharp(selection.png).raw().toBuffer({ resolveWithObject: true });
    expect(info).toMatchObject({ width: 1024, height: 512 });
    const { inside, outside, area } = share(
      Uint8Array.from({ length: 1024 * 512 }, (_, i) => data[i * info.channels] ?? 0),
      1024,
      { x0: 200, y0: 80, x1: 800, y1: 400 },
    );
    expect(inside / area).toBeGreaterThan(0.97);
    expect(outside).toBe(0);
  });

  it("removes a detected object in the engine: the early encoder's three tensors reach the decoder, prompted by the box", async () => {
    const box = { x: 150, y: 30, width: 40, height: 70 };
    const detector: ObjectDetector = {
      labels: ["person"],
      detect: async (_image: RgbaImage): Promise<Detection[]> => [{ label: "person", score: 0.9, box }],
    };
    const runner = new RecordingRunner();
    const engine = createImageEngine({
      detector,
      segmenterModel: { kind: "sam2", encoderPath, decoderPath },
      onnxRunner: runner,
    });
    // A dark figure on the white half: the fill must take the white around it.
    const data = new Uint8Array(WIDTH * HEIGHT * 4).fill(255);
    for (let y = box.y; y < box.y + box.height; y++) {
      for (let x = box.x; x < box.x + box.width; x++) data.fill(20, (y * WIDTH + x) * 4, (y * WIDTH + x) * 4 + 3);
    }
    const image = await sharp(data, { raw: { width: WIDTH, height: HEIGHT, channels: 4 } })
      .png()
      .toBuffer();
    const result = await engine.edit({ image, prompt: "remove the person", format: "png" });

    expect(runner.fedTo(encoderPath)).toHaveLength(1);
    const fed = runner.fedTo(decoderPath)[0];
    expect(fed?.high_res_feats_1?.data[0]).toBe(2);
    expect([...(fed?.point_labels?.data ?? [])]).toEqual([2, 3]);
    const centre = await sharp(result.image)
      .extract({ left: box.x + 10, top: box.y + 20, width: box.width - 20, height: box.height - 40 })
      .raw()
      .toBuffer();
    expect(Math.min(...centre)).toBeGreaterThan(200);
  });

  it("refuses an encoder that gives NaN, as an onnxruntime that runs the export wrongly would", async () => {
    const segmenter = new Sam2Segmenter({ encoderPath: nanEncoderPath, decoderPath, runner: new RecordingRunner() });
    const failure = await segmenter.embedEncoded(await halves(), 10_000_000, {}).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineError);
    expect(failure).toMatchObject({ reason: "model_failed", message: expect.stringContaining("sam2-encoder-nan.onnx") });
  });

  it("loads its encoder with every output and as it is (no 8-bit rewrite), under the keys the pool keeps", () => {
    const choice = { segmenterModel: { kind: "sam2" as const, encoderPath, decoderPath } };
    const segmenter = promptableSegmenter(choice, new RecordingRunner());
    expect(segmenter?.encoder).toEqual({ path: encoderPath, memoryPattern: true, allOutputs: true });
    expect(segmenter?.decoder).toMatchObject({ path: decoderPath, allOutputs: true });
    expect(promptableSegmenterSpecs(choice)).toEqual([segmenter?.encoder, segmenter?.decoder]);
  });
});
