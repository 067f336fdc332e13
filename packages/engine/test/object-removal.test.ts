import { readFile } from "node:fs/promises";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { Detection, RgbaImage } from "../src/engine.ports";
import { decodeImage } from "../src/image-codec";
import { coverage } from "../src/mask-ops";
import { HumanObjectDetector, suppressDuplicates } from "../src/object-detector.human";
import { DetectAndInpaintRemover, refineWithinBox, widenUserMask } from "../src/object-removal";
import { PatchMatchInpainter } from "../src/patch-inpainter";
import { rectangleMask } from "./synthetic-scenes.fixture";

const fixture = (name: string) => readFile(new URL(`./fixtures/${name}`, import.meta.url));

/** Two small astronaut portraits on gravel: a person on the left and one on the right. */
async function twoPeopleOnGravel(): Promise<RgbaImage> {
  const portrait = await sharp(await fixture("astronaut.jpg"))
    .resize(200)
    .toBuffer();
  const scene = await sharp(await fixture("gravel.jpg"))
    .resize(800, 640)
    .composite([
      { input: portrait, left: 60, top: 300 },
      { input: await sharp(portrait).flop().toBuffer(), left: 520, top: 260 },
    ])
    .jpeg({ quality: 92 })
    .toBuffer();
  return decodeImage(scene);
}

function people(detections: Detection[]): Detection[] {
  return detections.filter((detection) => detection.label === "person");
}

describe("HumanObjectDetector (CenterNet weights from @vladmandic/human, TensorFlow.js wasm)", () => {
  const detector = new HumanObjectDetector();

  it("finds the person in a portrait and the cup in a coffee photo, and nothing in a wall", async () => {
    const astronaut = await detector.detect(await decodeImage(await fixture("astronaut.jpg")), {});
    const person = people(astronaut)[0];
    expect(person?.score).toBeGreaterThan(0.4);
    // The person fills the left two thirds of the 512x512 portrait.
    expect(person?.box.width).toBeGreaterThan(250);
    expect((person?.box.x ?? 0) + (person?.box.width ?? 0) / 2).toBeLessThan(256);
    const coffee = await detector.detect(await decodeImage(await fixture("coffee.jpg")), {});
    expect(coffee.map((detection) => detection.label)).toContain("cup");
    expect(await detector.detect(await decodeImage(await fixture("brick.jpg")), {})).toEqual([]);
  });

  it("finds both people of a composite, in image coordinates", async () => {
    const found = people(await detector.detect(await twoPeopleOnGravel(), {}));
    expect(found).toHaveLength(2);
    const centres = found.map((detection) => detection.box.x + detection.box.width / 2).sort((a, b) => a - b);
    expect(centres[0]).toBeGreaterThan(60);
    expect(centres[0]).toBeLessThan(260);
    expect(centres[1]).toBeGreaterThan(520);
    expect(centres[1]).toBeLessThan(720);
  });

  it("keeps one box per object", () => {
    const box = { x: 10, y: 10, width: 100, height: 100 };
    const detections = [
      { label: "dog", score: 0.5, box },
      { label: "dog", score: 0.7, box: { ...box, x: 15 } },
      { label: "cat", score: 0.3, box },
    ];
    expect(suppressDuplicates(detections, 0.4).map((detection) => detection.score)).toEqual([0.7, 0.3]);
  });
});

describe("DetectAndInpaintRemover", () => {
  const detector = new HumanObjectDetector();
  const remover = new DetectAndInpaintRemover(detector, new PatchMatchInpainter());
  let scene: RgbaImage;

  beforeAll(async () => {
    scene = await twoPeopleOnGravel();
  });

  it("removes the person on the left only, and leaves the rest of the picture alone", async () => {
    const result = await remover.removeObjects(
      { image: scene, terms: ["person on the left"], prompt: "remove the person on the left" },
      {},
    );
    const remaining = people(await detector.detect(result, {}));
    expect(remaining).toHaveLength(1);
    expect((remaining[0]?.box.x ?? 0) + (remaining[0]?.box.width ?? 0) / 2).toBeGreaterThan(520);
    // The right half (the other person and its surroundings) is untouched.
    let changedOnRight = 0;
    for (let y = 0; y < scene.height; y++) {
      for (let x = 420; x < scene.width; x++) {
        const i = (y * scene.width + x) * 4;
        if (result.data[i] !== scene.data[i] || result.data[i + 1] !== scene.data[i + 1]) changedOnRight++;
      }
    }
    expect(changedOnRight).toBe(0);
  });

  it("removes every person for a plural", async () => {
    const result = await remover.removeObjects({ image: scene, terms: ["people"], prompt: "remove the people" }, {});
    expect(people(await detector.detect(result, {}))).toEqual([]);
  });

  it("fails, rather than returning the picture unchanged, when the target is not there", async () => {
    const error = await remover
      .removeObjects({ image: scene, terms: ["dog"], prompt: "remove the dog" }, {})
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: "nothing_detected", message: "No dog was found in the image." });
  });

  it("asks for a mask for targets the detector cannot find", async () => {
    await expect(
      remover.removeObjects({ image: scene, terms: ["watermark"], prompt: "remove the watermark" }, {}),
    ).rejects.toMatchObject({
      reason: "target_not_detectable",
      message: expect.stringContaining("send a mask"),
    });
    await expect(
      remover.removeObjects({ image: scene, terms: ["unicorn"], prompt: "remove the unicorn" }, {}),
    ).rejects.toMatchObject({
      reason: "target_not_detectable",
      message: expect.stringContaining("person, bicycle, car"),
    });
    await expect(remover.removeObjects({ image: scene, terms: [], prompt: "remove it" }, {})).rejects.toMatchObject({
      reason: "target_not_detectable",
    });
  });

  it("uses a given mask instead of detection", async () => {
    // "unicorn" would fail detection: with a mask the vocabulary is not used.
    const mask = rectangleMask(scene.width, scene.height, 300, 100, 80, 60);
    const result = await remover.removeObjects({ image: scene, mask, terms: ["unicorn"], prompt: "remove the unicorn" }, {});
    let changed = 0;
    for (let i = 0; i < mask.data.length; i++) if (result.data[i * 4] !== scene.data[i * 4]) changed++;
    expect(changed).toBeGreaterThan(80 * 60 * 0.5);
  });

  it("refuses an empty mask and one that covers most of the picture", async () => {
    const empty = { data: new Uint8Array(scene.width * scene.height), width: scene.width, height: scene.height };
    await expect(remover.removeObjects({ image: scene, mask: empty, terms: [], prompt: "remove" }, {})).rejects.toMatchObject({
      reason: "invalid_mask",
    });
    const most = rectangleMask(scene.width, scene.height, 0, 0, scene.width, Math.round(scene.height * 0.8));
    await expect(remover.removeObjects({ image: scene, mask: most, terms: [], prompt: "remove" }, {})).rejects.toThrow(
      /covers 8\d% of the image/,
    );
  });
});

describe("masks", () => {
  it("widens a user mask by a few pixels", () => {
    const mask = rectangleMask(400, 300, 100, 100, 50, 50);
    const widened = widenUserMask(mask);
    expect(coverage(widened.data)).toBeGreaterThan(coverage(mask.data));
    expect(widened.data[98 * 400 + 125]).toBe(255);
    expect(widened.data[80 * 400 + 125]).toBe(0);
  });

  it("shrinks a detection box to the object when the object stands out from its surroundings", async () => {
    // A red disc of radius 40 on grey; the detector's box would be its bounding square plus slack.
    const width = 300;
    const height = 240;
    const data = new Uint8Array(width * height * 4);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const inside = (x - 150) ** 2 + (y - 120) ** 2 <= 40 * 40;
        data.set(inside ? [200, 30, 30, 255] : [120, 125, 120, 255], (y * width + x) * 4);
      }
    }
    const mask = await refineWithinBox({ data, width, height }, { x: 100, y: 70, width: 100, height: 100 });
    let covered = 0;
    let discCovered = 0;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        if (!mask[y * width + x]) continue;
        covered++;
        if ((x - 150) ** 2 + (y - 120) ** 2 <= 40 * 40) discCovered++;
      }
    }
    expect(discCovered).toBeGreaterThan(Math.PI * 40 * 40 * 0.99);
    // The corners of the box, outside the disc and its margin, are left out.
    expect(covered).toBeLessThan(100 * 100 * 0.85);
    expect(mask[72 * width + 102]).toBe(0);
  });
});
