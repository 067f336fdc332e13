import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64 } from "../../../test/support/images";
import { type ModelMirror, sha256Of, startModelMirror } from "../../../test/support/model-mirror";
import { spawnServerEntry } from "../../../test/support/spawn-retouch";
import { startTestApp, waitForLog } from "../../../test/support/test-app";
import { TINY_BERT_VOCAB, tinyBertVocab, tinyGroundingDinoModel } from "../../engine/test/onnx-model.builder";

/**
 * An open-vocabulary detector in the service: a tiny model of Grounding
 * DINO's contract and its vocabulary, named by RETOUCH_OBJECT_DETECTOR in a
 * catalog file and served by a mirror on loopback. Until both files are
 * there, `detect: "trash can . power line"` is refused at submission (the
 * COCO detector knows neither); once they are, it is accepted and the job
 * removes the boxes the model reports.
 */
const id = (token: string) => TINY_BERT_VOCAB.indexOf(token);
const model = tinyGroundingDinoModel([
  { token: id("can"), box: [0.25, 0.5, 0.3, 0.4] },
  { token: id("line"), box: [0.75, 0.25, 0.2, 0.1] },
]);
const vocab = tinyBertVocab();
const MODEL_FILE = "test-dino.onnx";
const VOCAB_FILE = "test-dino-vocab.txt";
const WIDTH = 200;
const HEIGHT = 100;
let mirror: ModelMirror;
let catalogFile: string;
let picture: Buffer;

beforeAll(async () => {
  mirror = await startModelMirror();
  mirror.serve(MODEL_FILE, model);
  mirror.serve(VOCAB_FILE, vocab);
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-catalog-"));
  catalogFile = path.join(dir, "catalog.json");
  await writeFile(
    catalogFile,
    JSON.stringify({
      models: [
        {
          name: "test-dino",
          task: "detector",
          title: "A tiny model of Grounding DINO's contract",
          file: MODEL_FILE,
          urls: ["https://models.invalid/test-dino.onnx"],
          size: model.length,
          checksums: { sha256: sha256Of(model) },
          checksumSource: "computed by the test from the bytes its mirror serves",
          extraFiles: [
            {
              role: "vocab",
              file: VOCAB_FILE,
              urls: ["https://models.invalid/vocab.txt"],
              size: vocab.length,
              checksums: { sha256: sha256Of(vocab) },
              checksumSource: "computed by the test",
            },
          ],
          input: { kind: "grounding-dino", size: 64 },
          licence: { id: "MIT", source: "test fixture" },
          project: "https://example.invalid/test-models",
        },
      ],
    }),
  );
  // Grey, a red block where "trash can" answers and a blue bar where "power line" does.
  const data = Buffer.alloc(WIDTH * HEIGHT * 3, 128);
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      const i = (y * WIDTH + x) * 3;
      if (x >= 25 && x < 75 && y >= 35 && y < 65) data.set([220, 30, 30], i);
      if (x >= 135 && x < 165 && y >= 21 && y < 29) data.set([30, 40, 220], i);
    }
  }
  picture = await sharp(data, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
    .png()
    .toBuffer();
});
afterAll(() => mirror.close());

describe("an open-vocabulary detector from the catalog", () => {
  it('refuses detect: "trash can . power line" until it is installed, then removes what it names', async () => {
    const release = mirror.hold(MODEL_FILE);
    const app = await startTestApp({
      RETOUCH_MODEL_DOWNLOAD: "auto",
      RETOUCH_MODEL_MIRROR: mirror.url,
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_OBJECT_DETECTOR: "test-dino",
      RETOUCH_OBJECT_SEGMENTER: "none",
    });
    try {
      const account = await keyedAccount(app, { plan: "pro", credits: 10 });
      const body = { image: base64(picture), prompt: "remove them", detect: "trash can . power line", format: "png" };
      expect((await waitForLog(app, /"msg":"active models"/)).models).toMatchObject({ objectDetector: "CenterNet (built in)" });
      const refused = await request(app.url, "POST", "/api/process", { key: account.key, body });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body).toMatchObject({ code: "unsupported_instruction" });
      expect(JSON.stringify(refused.body)).toMatch(/trash can/);
      const capabilities = async () => (await request(app.url, "GET", "/api/capabilities")).body.models;
      expect(await capabilities()).toMatchObject({
        object_detector: { name: "test-dino", installed: false, open_vocabulary: false },
        segmenter: null,
      });

      release();
      expect((await waitForLog(app, /object detector switched/)).models).toMatchObject({ objectDetector: "test-dino" });
      const submitted = await request(app.url, "POST", "/api/process", { key: account.key, body });
      expect(submitted.status, submitted.text).toBe(200);
      expect((await capabilities()).object_detector).toEqual({ name: "test-dino", installed: true, open_vocabulary: true });
      const status = await waitForJob(app.url, account.key, submitted.body.job_id);
      expect(status).toMatchObject({ status: "done", format: "png" });
      const result = await request(app.url, "GET", `/api/process/result?job_id=${submitted.body.job_id}`, { key: account.key });
      const png = Buffer.from(await (await fetch(result.body.url.replace(app.config.publicBaseUrl, app.url))).arrayBuffer());
      const { data } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      const pixel = (x: number, y: number) => Array.from(data.subarray((y * WIDTH + x) * 3, (y * WIDTH + x) * 3 + 3));
      // Both blocks are filled from the grey around them; far from them nothing changed.
      for (const channel of [...pixel(50, 50), ...pixel(150, 25)]) expect(Math.abs(channel - 128)).toBeLessThan(30);
      expect(pixel(110, 90)).toEqual([128, 128, 128]);
    } finally {
      release();
      await app.close();
    }
  });
});

describe("pnpm retouch models list", () => {
  it("shows the files of the segmenter and detector entries, and says why Grounding DINO tiny is not pulled", async () => {
    const proc = spawnServerEntry("dist/admin.js", ["models", "list"], {
      RETOUCH_DATA_DIR: await mkdtemp(path.join(os.tmpdir(), "retouch-cli-models-")),
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_OBJECT_DETECTOR: "test-dino",
      RETOUCH_OBJECT_SEGMENTER: "mobilesam",
    });
    expect(await proc.exited).toBe(0);
    const output = proc.output();
    const row = (name: string) => output.split("\n").find((line) => line.startsWith(`${name} `));
    expect(row("mobilesam")).toMatch(/^mobilesam +segmenter +44\.7 MB +Apache-2\.0 +no +yes$/);
    expect(row("grounding-dino-tiny")).toMatch(/^grounding-dino-tiny +detector +unknown +Apache-2\.0 +no$/);
    expect(row("test-dino")).toMatch(/^test-dino +detector +[\d.]+ kB +MIT +no +yes$/);
    expect(output).toMatch(
      /^mobilesam: mobilesam-encoder\.onnx \(model, 28\.2 MB, not installed\), mobilesam-decoder\.onnx \(decoder, 16\.5 MB, not installed\)$/m,
    );
    expect(output).toMatch(
      /^ {2}not pulled: no checksum is published for grounding-dino-tiny-vocab\.txt; fetch it from https:\/\/huggingface\.co\/\S+vocab\.txt into the models directory yourself$/m,
    );
  });
});
