import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ModelMirror, sha256Of, startModelMirror } from "../../../test/support/model-mirror";
import type { Box, RgbaImage } from "../src/engine.ports";
import { EngineError } from "../src/engine-error";
import type { ModelEntry } from "../src/models/model-catalog";
import { ModelLibrary } from "../src/models/model-library";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { GroundingDinoDetector } from "../src/vision/object-detector.grounding-dino";
import { planEdit } from "../src/workflows/edit-plan";
import { createImageEngine } from "../src/workflows/engine";
import { readRemovalTerms } from "../src/workflows/object-removal";
import { TINY_BERT_VOCAB, tinyBertVocab, tinyGroundingDinoModel } from "./onnx-model.builder";

/**
 * The open-vocabulary detector's wiring, with a tiny model of Grounding DINO's
 * exact ONNX contract (onnx-model.builder.ts) and a tiny BERT vocabulary: each
 * of its two queries answers to one token ("can", "line") and reports a fixed
 * box, so what comes out says how the caption was tokenized, which tokens
 * were taken for which phrase, and how the boxes were read.
 */

const id = (token: string) => TINY_BERT_VOCAB.indexOf(token);
/** "trash can" answers on the left, "power line" at the top right (centre x, centre y, width, height in 0..1). */
const TRASH_CAN_BOX: [number, number, number, number] = [0.25, 0.5, 0.3, 0.4];
const POWER_LINE_BOX: [number, number, number, number] = [0.75, 0.25, 0.2, 0.1];
const model = tinyGroundingDinoModel([
  { token: id("can"), box: TRASH_CAN_BOX },
  { token: id("line"), box: POWER_LINE_BOX },
]);
const vocab = tinyBertVocab();
const WIDTH = 200;
const HEIGHT = 100;

let dir: string;
let modelPath: string;
let vocabPath: string;
let runner: LocalOnnxRunner;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "retouch-open-vocabulary-"));
  modelPath = path.join(dir, "tiny-grounding-dino.onnx");
  vocabPath = path.join(dir, "tiny-vocab.txt");
  await writeFile(modelPath, model);
  await writeFile(vocabPath, vocab);
  runner = new LocalOnnxRunner({ threads: 1 });
});

/** Grey, with a red block where the trash can's box is and a blue one in the power line's. */
function scene(): RgbaImage {
  const data = new Uint8Array(WIDTH * HEIGHT * 4);
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      const i = (y * WIDTH + x) * 4;
      const inCan = x >= 25 && x < 75 && y >= 35 && y < 65;
      const inLine = x >= 135 && x < 165 && y >= 21 && y < 29;
      data[i] = inCan ? 220 : inLine ? 30 : 128;
      data[i + 1] = inCan ? 30 : inLine ? 40 : 128;
      data[i + 2] = inCan ? 30 : inLine ? 220 : 128;
      data[i + 3] = 255;
    }
  }
  return { data, width: WIDTH, height: HEIGHT };
}

/** A box within float32's rounding of x, y, width, height. */
function expectBox(box: Box | undefined, [x, y, width, height]: [number, number, number, number]): void {
  expect(box).toBeDefined();
  expect(box?.x).toBeCloseTo(x, 4);
  expect(box?.y).toBeCloseTo(y, 4);
  expect(box?.width).toBeCloseTo(width, 4);
  expect(box?.height).toBeCloseTo(height, 4);
}

describe("Grounding DINO detector", () => {
  it("tokenizes the phrases as one caption and knows which tokens are each phrase's", async () => {
    const detector = new GroundingDinoDetector({ modelPath, vocabPath, runner, size: 64 });
    const caption = await detector.encode(["Trash can", "power lines."]);
    // [CLS] trash can . power line ##s . [SEP]
    expect(caption.ids).toEqual([2, 6, 7, 5, 8, 9, 10, 5, 3]);
    expect(caption.spans).toEqual([
      [1, 2],
      [4, 5, 6],
    ]);
  });

  it("labels each box with the phrase whose tokens score on it, in image pixels", async () => {
    const detector = new GroundingDinoDetector({ modelPath, vocabPath, runner, size: 64 });
    const found = await detector.detect(scene(), {}, ["trash can", "power line"]);
    const byLabel = Object.fromEntries(found.map((detection) => [detection.label, detection]));
    expect(Object.keys(byLabel).sort()).toEqual(["power line", "trash can"]);
    // cxcywh in fractions of the picture -> x, y, width, height in its pixels.
    expectBox(byLabel["trash can"]?.box, [20, 30, 60, 40]);
    expectBox(byLabel["power line"]?.box, [130, 20, 40, 10]);
    // sigmoid(5)
    expect(byLabel["trash can"]?.score).toBeCloseTo(0.9933, 3);

    // The order of the phrases does not matter: each box keeps its own phrase.
    const swapped = await detector.detect(scene(), {}, ["power line", "trash can"]);
    expectBox(swapped.find((detection) => detection.label === "trash can")?.box, [20, 30, 60, 40]);
  });

  it("reports nothing for a phrase that was not asked for (its query scores below the threshold)", async () => {
    const detector = new GroundingDinoDetector({ modelPath, vocabPath, runner, size: 64 });
    const found = await detector.detect(scene(), {}, ["power line"]);
    expect(found.map((detection) => detection.label)).toEqual(["power line"]);
    expect(await detector.detect(scene(), {}, [])).toEqual([]);
  });
});

describe("reading removal terms for an open-vocabulary detector", () => {
  it("asks for a COCO thing by its COCO name, with its qualifiers read; for anything else, by the words themselves", () => {
    const [person, cones, line] = readRemovalTerms(["the person on the left", "all the traffic cones", "the power line"], [], {
      openVocabulary: true,
    });
    expect(person).toMatchObject({ labels: ["person"], sides: ["left"], all: false });
    expect(cones).toMatchObject({ labels: ["traffic cones"], all: true, sides: [] });
    expect(line).toMatchObject({ labels: ["power line"], all: false });
    // Without one, the same words are refused as before.
    expect(() => readRemovalTerms(["the power line"], [])).toThrow(/cannot be found automatically/);
  });
});

describe("open vocabulary in object removal", () => {
  it("refuses a thing the COCO detector does not know, at submission and in the engine, when no open-vocabulary detector is installed", async () => {
    const plan = planEdit({ prompt: "remove them", detect: "trash can . power line", hasMask: false }, { provider: false });
    expect(plan).toMatchObject({ ok: false, reason: "target_not_detectable" });
    const accepted = planEdit(
      { prompt: "remove them", detect: "trash can . power line", hasMask: false },
      { provider: false, openVocabulary: true },
    );
    expect(accepted).toMatchObject({ ok: true, workflow: "object_removal" });
    if (accepted.ok) expect(accepted.route.removalTerms).toEqual(["trash can", "power line"]);
  });

  describe("with the detector pulled from the catalog through a loopback mirror", () => {
    let mirror: ModelMirror;
    let library: ModelLibrary;
    const entry: ModelEntry = {
      name: "tiny-grounding-dino",
      task: "detector",
      title: "A tiny model of Grounding DINO's contract",
      file: "tiny-grounding-dino.onnx",
      urls: ["https://example.invalid/tiny-grounding-dino.onnx"],
      size: model.length,
      checksums: { sha256: sha256Of(model) },
      checksumSource: "computed by the test",
      extraFiles: [
        {
          role: "vocab",
          file: "tiny-grounding-dino-vocab.txt",
          urls: ["https://example.invalid/vocab.txt"],
          size: vocab.length,
          checksums: { sha256: sha256Of(vocab) },
          checksumSource: "computed by the test",
        },
      ],
      input: { kind: "grounding-dino", size: 64 },
      licence: { id: "MIT", source: "this test" },
      project: "https://example.invalid/",
    };

    beforeAll(async () => {
      mirror = await startModelMirror();
      mirror.serve(entry.file, model);
      mirror.serve("tiny-grounding-dino-vocab.txt", vocab);
      library = new ModelLibrary({
        dir: await mkdtemp(path.join(os.tmpdir(), "retouch-open-vocabulary-models-")),
        catalog: { entries: [entry], defaults: {} },
        mirror: mirror.url,
      });
    });
    afterAll(() => mirror.close());

    it('removes what `detect: "trash can . power line"` names, and leaves the rest of the picture', async () => {
      expect((await library.status(entry.name)).state).toBe("missing");
      await library.pull(entry.name);
      expect(mirror.requests.map((request) => request.file).sort()).toEqual([entry.file, "tiny-grounding-dino-vocab.txt"].sort());
      const files = library.paths(entry.name);
      expect((await library.status(entry.name)).state).toBe("installed");

      const engine = createImageEngine({
        objectDetector: { kind: "grounding-dino", modelPath: files.model ?? "", vocabPath: files.vocab ?? "", size: 64 },
        objectSegmenter: "none",
        onnxRunner: runner,
      });
      const source = scene();
      const image = await sharp(source.data, { raw: { width: WIDTH, height: HEIGHT, channels: 4 } })
        .png()
        .toBuffer();
      const result = await engine.edit({ image, prompt: "remove them", detect: "trash can . power line", format: "png" });
      expect(result.workflow).toBe("object_removal");
      const output = await decodeImage(result.image, 40_000_000);
      const pixel = (x: number, y: number) => Array.from(output.data.subarray((y * WIDTH + x) * 4, (y * WIDTH + x) * 4 + 3));
      // The red block and the blue bar are filled from the grey around them.
      for (const [x, y] of [
        [50, 50],
        [150, 25],
      ] as const) {
        for (const channel of pixel(x, y)) expect(Math.abs(channel - 128)).toBeLessThan(30);
      }
      // Far from both boxes nothing changed.
      expect(pixel(110, 90)).toEqual([128, 128, 128]);
      expect(pixel(5, 5)).toEqual([128, 128, 128]);
    });

    it("still refuses what it cannot read even with the open-vocabulary detector", async () => {
      const files = library.paths(entry.name);
      const engine = createImageEngine({
        objectDetector: { kind: "grounding-dino", modelPath: files.model ?? "", vocabPath: files.vocab ?? "", size: 64 },
        objectSegmenter: "none",
        onnxRunner: runner,
      });
      const image = await sharp(scene().data, { raw: { width: WIDTH, height: HEIGHT, channels: 4 } })
        .png()
        .toBuffer();
      // Two things and how one stands to the other: a box cannot say which lamp is meant.
      const refused = await engine.edit({ image, prompt: "remove the lamp next to the sofa" }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(EngineError);
      expect(refused).toMatchObject({ reason: "unsupported_instruction" });
    });
  });
});
