import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { Detection, EditRequest, ObjectDetector, RgbaImage } from "../src/engine.ports";
import { EngineError } from "../src/engine-error";
import { inspectImage } from "../src/pixels/image-codec";
import { ClassicalBackgroundRemover } from "../src/workflows/background-removal.classical";
import { OnnxBackgroundRemover } from "../src/workflows/background-removal.onnx";
import { createImageEngine } from "../src/workflows/engine";
import { redSaliencyModel } from "./onnx-model.builder";
import { iou, productScenes, redBallAndBlueBox, type Scene } from "./synthetic-scenes.fixture";

const engine = createImageEngine();

async function rawOf(bytes: Buffer): Promise<{ data: Buffer; width: number; height: number; channels: number }> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

async function alphaOfPng(bytes: Buffer): Promise<Uint8Array> {
  const { data, info } = await sharp(bytes).ensureAlpha().extractChannel(3).raw().toBuffer({ resolveWithObject: true });
  expect(info.channels).toBe(1);
  return data;
}

describe("createImageEngine: the three workflows from bytes to bytes", () => {
  let scene: Scene;

  beforeAll(async () => {
    scene = (await productScenes(200))[1] as Scene;
  });

  it("background removal always gives a PNG with alpha, whatever format was asked", async () => {
    const result = await engine.edit({ image: scene.jpeg, prompt: "Remove the background", format: "jpeg", quality: 50 });
    expect(result).toMatchObject({ workflow: "background_removal", format: "png", width: scene.width, height: scene.height });
    const metadata = await sharp(result.image).metadata();
    expect(metadata).toMatchObject({ format: "png", hasAlpha: true, width: result.width, height: result.height });
    expect(iou(await alphaOfPng(result.image), scene.truth)).toBeGreaterThan(0.97);
  });

  it("generative edits default to JPEG and honour format and quality", async () => {
    const jpeg = await engine.edit({ image: scene.jpeg, prompt: "make it black and white" });
    expect(jpeg).toMatchObject({ workflow: "generative_edit", format: "jpeg" });
    expect((await sharp(jpeg.image).metadata()).format).toBe("jpeg");
    const { data } = await rawOf(jpeg.image);
    let spread = 0;
    for (let i = 0; i < data.length; i += 3)
      spread +=
        Math.max(data[i] ?? 0, data[i + 1] ?? 0, data[i + 2] ?? 0) - Math.min(data[i] ?? 0, data[i + 1] ?? 0, data[i + 2] ?? 0);
    expect(spread / (data.length / 3)).toBeLessThan(2);

    const webp = await engine.edit({ image: scene.jpeg, prompt: "rotate 90 degrees", format: "webp" });
    expect(webp).toMatchObject({ format: "webp", width: scene.height, height: scene.width });
    expect((await sharp(webp.image).metadata()).format).toBe("webp");

    const low = await engine.edit({ image: scene.jpeg, prompt: "sharpen", quality: 15 });
    const high = await engine.edit({ image: scene.jpeg, prompt: "sharpen", quality: 95 });
    expect(low.image.length).toBeLessThan(high.image.length * 0.6);
  });

  it("applies the EXIF orientation before editing", async () => {
    const rotated = await sharp(scene.jpeg).withMetadata({ orientation: 8 }).jpeg().toBuffer();
    const result = await engine.edit({ image: rotated, prompt: "make it brighter", format: "png" });
    expect([result.width, result.height]).toEqual([scene.height, scene.width]);
    expect(await inspectImage(rotated)).toEqual({ format: "jpeg", width: scene.height, height: scene.width });
  });

  it("object removal with a mask fills the marked area and leaves the far pixels as they were", async () => {
    const mask = await sharp({ create: { width: scene.width, height: scene.height, channels: 3, background: "#000" } })
      .composite([{ input: { create: { width: 40, height: 40, channels: 3, background: "#fff" } }, left: 150, top: 70 }])
      .png()
      .toBuffer();
    const result = await engine.edit({ image: scene.jpeg, prompt: "remove this", mask, format: "png" });
    expect(result).toMatchObject({ workflow: "object_removal", format: "png" });
    const before = await rawOf(scene.jpeg);
    const after = await rawOf(result.image);
    let farDifference = 0;
    let farCount = 0;
    let insideChanged = 0;
    for (let y = 0; y < scene.height; y++) {
      for (let x = 0; x < scene.width; x++) {
        const i = (y * scene.width + x) * 3;
        const difference = Math.abs((after.data[i] ?? 0) - (before.data[i] ?? 0));
        const inside = x >= 150 && x < 190 && y >= 70 && y < 110;
        const far = x < 130 || x >= 210 || y < 50 || y >= 130;
        if (inside && difference > 0) insideChanged++;
        if (far) {
          farDifference += difference;
          farCount++;
        }
      }
    }
    expect(farDifference / farCount).toBe(0);
    expect(insideChanged).toBeGreaterThan(40 * 40 * 0.3);
  });

  it("object removal runs the prompt's other instructions after the removal", async () => {
    const mask = await sharp({ create: { width: scene.width, height: scene.height, channels: 3, background: "#000" } })
      .composite([{ input: { create: { width: 30, height: 30, channels: 3, background: "#fff" } }, left: 20, top: 20 }])
      .png()
      .toBuffer();
    const result = await engine.edit({
      image: scene.jpeg,
      prompt: "remove this and make it black and white",
      mask,
      format: "png",
    });
    expect(result.workflow).toBe("object_removal");
    const { data } = await rawOf(result.image);
    expect(Math.abs((data[3 * (100 * scene.width + 125)] ?? 0) - (data[3 * (100 * scene.width + 125) + 2] ?? 0))).toBeLessThan(2);
  });

  it("object removal by detection removes the person from a photograph", async () => {
    const portrait = await sharp(await readFile(new URL("./fixtures/astronaut.jpg", import.meta.url)))
      .resize(220)
      .toBuffer();
    const photo = await sharp(await readFile(new URL("./fixtures/gravel.jpg", import.meta.url)))
      .resize(640, 512)
      .composite([{ input: portrait, left: 300, top: 200 }])
      .jpeg()
      .toBuffer();
    const result = await engine.edit({ image: photo, prompt: "Remove the person" });
    expect(result).toMatchObject({ workflow: "object_removal", format: "jpeg", width: 640, height: 512 });
    // Running the same detector on the result finds nobody.
    const again = await engine.edit({ image: result.image, prompt: "remove the person" }).catch((error: unknown) => error);
    expect(again).toMatchObject({ reason: "nothing_detected" });
  });

  it("takes `detect` over the prompt's words", async () => {
    const error = await engine
      .edit({ image: scene.jpeg, prompt: "make it brighter", detect: "dog . cat" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ reason: "nothing_detected", message: "No dog was found in the image." });
  });

  it("fails with a reason, never an unchanged picture, for what it cannot do", async () => {
    await expect(engine.edit({ image: scene.jpeg, prompt: "replace the box with a robot" })).rejects.toMatchObject({
      reason: "unsupported_instruction",
    });
    await expect(engine.edit({ image: scene.jpeg, prompt: "delete the text" })).rejects.toMatchObject({
      reason: "target_not_detectable",
    });
  });
});

describe("createImageEngine: input checks and options", () => {
  const png = (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: "#808080" } })
      .png()
      .toBuffer();

  it("refuses images over the configured pixel limit before decoding", async () => {
    const small = createImageEngine({ maxPixels: 10_000 });
    await expect(small.edit({ image: await png(200, 100), prompt: "blur" })).rejects.toMatchObject({
      reason: "image_too_large",
      message: "The image is 200x100 pixels (0.0 MP); the limit is 0.0 MP. Send a smaller image.",
    });
  });

  it("refuses bad request fields and non-images", async () => {
    const image = await png(32, 32);
    const bad: EditRequest[] = [
      { image, prompt: "blur", quality: 0 },
      { image, prompt: "blur", quality: 101 },
      { image, prompt: "blur", quality: 50.5 },
      { image, prompt: "blur", format: "gif" as never },
    ];
    for (const request of bad) await expect(engine.edit(request)).rejects.toMatchObject({ reason: "invalid_request" });
    await expect(engine.edit({ image: Buffer.from("GIF89a"), prompt: "blur" })).rejects.toMatchObject({
      reason: "unsupported_image",
    });
    await expect(engine.edit({ image, prompt: "blur", mask: Buffer.from("nope") })).rejects.toMatchObject({
      reason: "invalid_mask",
    });
  });

  it("stops when the request is cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(engine.edit({ image: await png(32, 32), prompt: "blur", signal: controller.signal })).rejects.toMatchObject({
      reason: "cancelled",
    });
  });

  it("uses a configured ONNX background model for background removal and for background edits", async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), "retouch-engine-"));
    const modelPath = path.join(directory, "u2net-red.onnx");
    await writeFile(modelPath, redSaliencyModel());
    const scene = await redBallAndBlueBox();
    const withModel = createImageEngine({ backgroundModel: { path: modelPath }, maxPixels: 2_000_000 });
    await withModel.warmUp?.();
    const cutout = await withModel.edit({ image: scene.jpeg, prompt: "make the background transparent" });
    expect(iou(await alphaOfPng(cutout.image), scene.truth)).toBeGreaterThan(0.95);
    // The generative editor's "white background" uses the same model: the blue box disappears into white.
    const flattened = await rawOf(
      (await withModel.edit({ image: scene.jpeg, prompt: "put it on a white background", format: "png" })).image,
    );
    const boxCentre = (100 * scene.width + 224) * flattened.channels;
    expect(flattened.data.subarray(boxCentre, boxCentre + 3).every((value) => value > 245)).toBe(true);
    // The classical segmenter keeps the box: the model really was used.
    const classical = await createImageEngine().edit({ image: scene.jpeg, prompt: "remove the background" });
    expect(iou(await alphaOfPng(classical.image), scene.truth)).toBeLessThan(0.8);
  });

  it("detects on the input decoded at the detector's size, before the full frame, and removes what it found at full size", async () => {
    // A red square on gravel, where the detector below reports its "person".
    const square = await sharp({ create: { width: 120, height: 100, channels: 3, background: "#e01010" } })
      .png()
      .toBuffer();
    const photo = await sharp(await readFile(new URL("./fixtures/gravel.jpg", import.meta.url)))
      .resize(640, 512)
      .composite([{ input: square, left: 180, top: 140 }])
      .jpeg({ quality: 95 })
      .toBuffer();
    const seen: string[] = [];
    // Boxes come in the pixels of the image it is given: x 16-32 of 64 is x 160-320 of 640.
    const detector = (inputSize?: number): ObjectDetector => ({
      labels: ["person"],
      inputSize,
      async detect(image: RgbaImage): Promise<Detection[]> {
        seen.push(`${image.width}x${image.height}`);
        const sx = image.width / 64;
        const sy = image.height / 64;
        return [{ label: "person", score: 0.9, box: { x: 16 * sx, y: 16 * sy, width: 16 * sx, height: 16 * sy } }];
      },
    });
    const before = await rawOf(photo);
    for (const [inputSize, expected] of [
      [64, "64x64"],
      [undefined, "640x512"],
    ] as const) {
      seen.length = 0;
      const result = await createImageEngine({ detector: detector(inputSize) }).edit({
        image: photo,
        prompt: "remove the person",
      });
      expect(seen).toEqual([expected]);
      const after = await rawOf(result.image);
      const at = (x: number, y: number) => after.data.subarray((y * 640 + x) * 3, (y * 640 + x) * 3 + 3);
      // The middle of the square is gravel again, not red.
      const [red = 0, green = 0] = at(240, 190);
      expect(red - green).toBeLessThan(60);
      // Far from the box the picture is as it was (up to JPEG's re-encoding).
      let difference = 0;
      for (let y = 400; y < 512; y++) {
        for (let x = 480; x < 640; x++)
          difference += Math.abs((after.data[(y * 640 + x) * 3] ?? 0) - (before.data[(y * 640 + x) * 3] ?? 0));
      }
      expect(difference / (112 * 160)).toBeLessThan(4);
    }
  });

  it("lets another implementation replace a workflow (a hosted provider would plug in the same way)", async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), "retouch-engine-"));
    const modelPath = path.join(directory, "red.onnx");
    await writeFile(modelPath, redSaliencyModel());
    const scene = await redBallAndBlueBox();
    const plugged = createImageEngine({ backgroundRemover: new OnnxBackgroundRemover({ modelPath, kind: "u2net" }) });
    const result = await plugged.edit({ image: scene.jpeg, prompt: "remove the background" });
    expect(iou(await alphaOfPng(result.image), scene.truth)).toBeGreaterThan(0.95);
    const coarse = createImageEngine({ backgroundRemover: new ClassicalBackgroundRemover({ workingSize: 64 }) });
    expect((await coarse.edit({ image: scene.jpeg, prompt: "remove the background" })).format).toBe("png");
  });
});
