import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { Box, RgbaImage } from "../src/engine.ports";
import { decodeImage } from "../src/pixels/image-codec";
import { BlazeFaceDetector, planTiles } from "../src/vision/face-detector.blazeface";
import { createImageEngine } from "../src/workflows/engine";
import { FACES, fixture, groupPicture, laplacianVariance, sameFace } from "./faces.fixture";

/**
 * "Blur the faces" on real photographs: BlazeFace (Human's weights, in a
 * thread of its own) finds the faces, and only they are blurred.
 */
const detector = new BlazeFaceDetector();
const engine = createImageEngine();

async function photo(name: string): Promise<RgbaImage> {
  return decodeImage(await fixture(name));
}

/** `box` grown around its centre by `factor`. */
function grown(box: Box, factor: number): Box {
  return {
    x: box.x + box.width / 2 - (box.width * factor) / 2,
    y: box.y + box.height / 2 - (box.height * factor) / 2,
    width: box.width * factor,
    height: box.height * factor,
  };
}

function inside(box: Box, x: number, y: number): boolean {
  return x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height;
}

/** Pixels outside every `keepOut` box that differ between two pictures of one size. */
function changedOutside(a: RgbaImage, b: RgbaImage, keepOut: Box[]): number {
  let changed = 0;
  for (let y = 0; y < a.height; y++)
    for (let x = 0; x < a.width; x++) {
      if (keepOut.some((box) => inside(box, x, y))) continue;
      const i = (y * a.width + x) * 4;
      if (a.data[i] !== b.data[i] || a.data[i + 1] !== b.data[i + 1] || a.data[i + 2] !== b.data[i + 2]) changed++;
    }
  return changed;
}

describe("BlazeFaceDetector on real photographs", () => {
  it.each(["astronaut.jpg", "basketball.jpg"])(
    "finds the frontal face in %s and nothing else",
    async (name) => {
      const faces = await detector.detectFaces(await photo(name), {});
      const truth = FACES[name] as Box;
      expect(faces).toHaveLength(1);
      const [face] = faces;
      expect(sameFace(face?.box as Box, truth)).toBe(true);
      expect(face?.box.width).toBeGreaterThan(truth.width * 0.8);
      expect(face?.box.width).toBeLessThan(truth.width * 1.25);
    },
    60_000,
  );

  // Each of these had a face-like patch scoring 0.6 to 0.77 on the first look; the second look turns them down.
  it.each(["apple.jpg", "dog.jpg", "fallen-leaf.jpg", "raccoon.jpg"])(
    "finds no face in %s",
    async (name) => {
      expect(await detector.detectFaces(await photo(name), {})).toEqual([]);
    },
    60_000,
  );

  it("finds small faces in a large group picture through the tiles, and nothing between them", async () => {
    const sizes = [48, 64, 96, 128];
    const { jpeg, faces: truth } = await groupPicture(3000, 2000, sizes);
    const image = await decodeImage(jpeg);
    expect(planTiles(image.width, image.height).length).toBeLessThanOrEqual(64);
    const faces = await detector.detectFaces(image, {});
    // One pass over the whole frame sees the 3000 px picture at 256 px: every face here is under 11 px to it.
    const found = truth.map((face) => faces.some((detection) => sameFace(detection.box, face)));
    const large = truth.filter((face) => face.width >= 64);
    const largeFound = truth.filter((face, i) => face.width >= 64 && found[i]);
    expect(largeFound.length).toBeGreaterThanOrEqual(large.length - 1);
    expect(found.filter(Boolean).length).toBeGreaterThanOrEqual(12);
    // Every box is one of the pasted faces.
    expect(faces.filter((detection) => !truth.some((face) => sameFace(detection.box, face)))).toEqual([]);
  }, 120_000);

  it("ends the detection when the edit is cancelled", async () => {
    const controller = new AbortController();
    const detection = detector.detectFaces(await photo("astronaut.jpg"), { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(detection).rejects.toMatchObject({ reason: "cancelled" });
  });
});

describe("blur the faces, through the engine", () => {
  it("blurs the face past recognition and leaves every pixel away from it exactly as it was", async () => {
    const input = await fixture("astronaut.jpg");
    const result = await engine.edit({ image: input, prompt: "Blur the faces please", format: "png" });
    expect(result.workflow).toBe("generative_edit");
    const [before, after] = [await decodeImage(input), await decodeImage(result.image)];
    const face = FACES["astronaut.jpg"] as Box;
    const detailBefore = laplacianVariance(before, face);
    const detailAfter = laplacianVariance(after, face);
    expect(detailAfter).toBeLessThan(detailBefore / 20);
    // Outside the face grown 2.5 times (the blurred ellipse reaches 1.7 times), not one pixel changed.
    expect(changedOutside(before, after, [grown(face, 2.5)])).toBe(0);
    // The rest of the picture keeps its detail: the flag and the shuttle model.
    expect(laplacianVariance(after, { x: 0, y: 0, width: 120, height: 300 })).toBe(
      laplacianVariance(before, { x: 0, y: 0, width: 120, height: 300 }),
    );
    // The face detector no longer finds a face there.
    expect((await detector.detectFaces(after, {})).filter((found) => sameFace(found.box, face))).toEqual([]);
  }, 120_000);

  it("pixelates the faces: blocks over the face, the rest untouched", async () => {
    const input = await fixture("grace-hopper.jpg");
    const result = await engine.edit({ image: input, prompt: "pixelate all faces", format: "png" });
    const [before, after] = [await decodeImage(input), await decodeImage(result.image)];
    const face = FACES["grace-hopper.jpg"] as Box;
    // The face's centre is flat blocks: most neighbouring pixels equal.
    const centre = grown(face, 0.5);
    let equal = 0;
    let pairs = 0;
    for (let y = Math.round(centre.y); y < centre.y + centre.height; y++)
      for (let x = Math.round(centre.x); x < centre.x + centre.width - 1; x++) {
        const i = (y * after.width + x) * 4;
        pairs++;
        if (after.data[i] === after.data[i + 4] && after.data[i + 1] === after.data[i + 5]) equal++;
      }
    expect(equal / pairs).toBeGreaterThan(0.85);
    expect(laplacianVariance(after, centre)).toBeLessThan(laplacianVariance(before, centre) / 3);
    expect(changedOutside(before, after, [grown(face, 2.5)])).toBe(0);
  }, 120_000);

  it("fails with nothing_detected, saying so, when there is no face", async () => {
    await expect(engine.edit({ image: await fixture("apple.jpg"), prompt: "blur the faces" })).rejects.toMatchObject({
      reason: "nothing_detected",
      message: expect.stringMatching(/^No face was found in the picture, so there is nothing to blur/),
    });
  }, 60_000);

  it("refuses one named face when the picture has several, rather than blur someone else's", async () => {
    // Two small astronaut portraits on gravel.
    const portrait = await sharp(await fixture("astronaut.jpg"))
      .resize(240)
      .toBuffer();
    const scene = await sharp(await fixture("gravel.jpg"))
      .resize(800, 640)
      .composite([
        { input: portrait, left: 60, top: 300 },
        { input: await sharp(portrait).flop().toBuffer(), left: 500, top: 260 },
      ])
      .jpeg({ quality: 92 })
      .toBuffer();
    await expect(engine.edit({ image: scene, prompt: "blur her face" })).rejects.toMatchObject({
      reason: "unsupported_instruction",
      message: expect.stringContaining("names one face and the picture has 2"),
    });
    // "all the faces" blurs both.
    const both = await engine.edit({ image: scene, prompt: "blur all the faces", format: "png" });
    const after = await decodeImage(both.image);
    expect(await detector.detectFaces(after, {})).toEqual([]);
  }, 120_000);

  it.each([
    ["blur the license plate", "license plate"],
    ["blur the faces and the license plates", "the license plates"],
    ["blur the face on the left", "cannot choose"],
  ])("refuses %j whole instead of blurring the whole picture", async (prompt, said) => {
    await expect(engine.edit({ image: await fixture("astronaut.jpg"), prompt })).rejects.toMatchObject({
      reason: "unsupported_instruction",
      message: expect.stringContaining(said),
    });
  });
});
