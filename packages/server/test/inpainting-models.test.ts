import { existsSync } from "node:fs";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, rectangleMask } from "../../../test/support/images";
import { type ModelMirror, startModelMirror, writeTestCatalog } from "../../../test/support/model-mirror";
import { spawnServerEntry } from "../../../test/support/spawn-retouch";
import { startTestApp, type TestApp, waitForLog } from "../../../test/support/test-app";
import { meanColourLamaModel } from "../../engine/test/onnx-model.builder";

/**
 * Learned inpainting in the service: a model of LaMa's contract, named in a
 * catalog file and served by a mirror on loopback, is fetched at start while
 * object removal runs on PatchMatch, then used by the next job. The test model
 * paints a hole the mean colour of what its crop keeps: one flat colour,
 * where PatchMatch copies the photograph's gravel in.
 */
const model = meanColourLamaModel();
const FILE = "test-fill.onnx";
const hole = { left: 120, top: 90, width: 70, height: 70 };
let mirror: ModelMirror;
let catalogFile: string;
let photo: Buffer;
let mask: Buffer;

beforeAll(async () => {
  mirror = await startModelMirror();
  mirror.serve(FILE, model);
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-catalog-"));
  catalogFile = await writeTestCatalog(dir, [{ name: "test-fill", bytes: model, inpainting: { kind: "lama", size: 512 } }]);
  photo = await readFile(new URL("../../engine/test/fixtures/gravel.jpg", import.meta.url));
  const { width, height } = await sharp(photo).metadata();
  mask = await rectangleMask(width ?? 0, height ?? 0, hole);
});
afterAll(() => mirror.close());

async function submit(app: TestApp, account: KeyedAccount): Promise<{ jobId: string; status: Record<string, unknown> }> {
  const submitted = await request(app.url, "POST", "/api/process", {
    key: account.key,
    body: { image: base64(photo), mask: base64(mask), prompt: "remove the stone", format: "png" },
  });
  expect(submitted.status, submitted.text).toBe(200);
  return { jobId: submitted.body.job_id, status: await waitForJob(app.url, account.key, submitted.body.job_id) };
}

/** Removes the marked stone through the API; returns how many distinct colours the hole was filled with. */
async function coloursInHole(app: TestApp, account: KeyedAccount): Promise<number> {
  const { jobId, status } = await submit(app, account);
  expect(status).toMatchObject({ status: "done", format: "png" });
  const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
  const png = Buffer.from(await (await fetch(result.body.url.replace(app.config.publicBaseUrl, app.url))).arrayBuffer());
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const colours = new Set<string>();
  for (let y = hole.top; y < hole.top + hole.height; y++) {
    for (let x = hole.left; x < hole.left + hole.width; x++) {
      const i = (y * info.width + x) * 3;
      colours.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
    }
  }
  return colours.size;
}

describe("an inpainting model from the catalog", () => {
  it("is fetched in the background while PatchMatch answers, then fills the next job; at the next start it is used at once", async () => {
    mirror.requests.length = 0;
    const release = mirror.hold(FILE);
    const app = await startTestApp({
      RETOUCH_MODEL_DOWNLOAD: "auto",
      RETOUCH_MODEL_MIRROR: mirror.url,
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_INPAINTING_MODEL: "test-fill",
    });
    try {
      const account = await keyedAccount(app, { plan: "pro", credits: 10 });
      expect((await waitForLog(app, /"msg":"active models"/)).models).toMatchObject({ inpainting: "PatchMatch (built in)" });
      await mirror.requested(FILE);
      // The download is held: the job runs at once, on PatchMatch, which copies gravel into the hole.
      expect(await coloursInHole(app, account)).toBeGreaterThan(50);
      expect(app.logs.some((line) => line.includes("inpainting model switched"))).toBe(false);

      release();
      expect((await waitForLog(app, /inpainting model switched/)).models).toMatchObject({ inpainting: "test-fill" });
      expect(existsSync(path.join(app.config.dataDir, "models", FILE))).toBe(true);
      // The next job is filled by the model: one colour (give or take the resize's rounding).
      expect(await coloursInHole(app, account)).toBeLessThanOrEqual(3);

      const fetched = mirror.requests.filter((entry) => entry.file === FILE).length;
      app.logs.length = 0;
      await app.restart();
      expect((await waitForLog(app, /"msg":"active models"/)).models).toMatchObject({ inpainting: "test-fill" });
      expect(await coloursInHole(app, account)).toBeLessThanOrEqual(3);
      expect(mirror.requests.filter((entry) => entry.file === FILE)).toHaveLength(fetched);
    } finally {
      await app.close();
    }
  });

  it("with RETOUCH_MODEL_DOWNLOAD=off, fetches nothing, says how to install it, and removes objects with PatchMatch", async () => {
    mirror.requests.length = 0;
    const app = await startTestApp({
      RETOUCH_MODEL_MIRROR: mirror.url,
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_INPAINTING_MODEL: "test-fill",
    });
    try {
      const warning = await waitForLog(app, /inpainting model test-fill is not installed and RETOUCH_MODEL_DOWNLOAD=off/);
      expect(warning.msg).toMatch(/object removal uses PatchMatch; run `pnpm retouch models pull test-fill`/);
      expect(mirror.requests.filter((entry) => entry.file === FILE)).toEqual([]);
      expect(await coloursInHole(app, await keyedAccount(app, { plan: "pro", credits: 10 }))).toBeGreaterThan(50);
    } finally {
      await app.close();
    }
  });
});

describe("pnpm retouch models list", () => {
  it("marks the configured inpainting model as the one in use", async () => {
    const proc = spawnServerEntry("dist/admin.js", ["models", "list"], {
      RETOUCH_DATA_DIR: await mkdtemp(path.join(os.tmpdir(), "retouch-cli-models-")),
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_INPAINTING_MODEL: "test-fill",
    });
    expect(await proc.exited).toBe(0);
    const row = (name: string) =>
      proc
        .output()
        .split("\n")
        .find((line) => line.startsWith(`${name} `));
    expect(row("test-fill")).toMatch(/^test-fill +inpainting +[\d.]+ kB +MIT +no +yes$/);
    expect(row("lama")).toMatch(/^lama +inpainting +208\.0 MB +Apache-2\.0 +no$/);
    expect(row("isnet-general-use")).toMatch(/ +no +yes$/);
  });
});

describe("an inpainting model given by path that cannot be loaded", () => {
  it("fails the object removal with model_failed, refunded, and says why in the log", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-broken-model-"));
    const file = path.join(dir, "lama.onnx");
    await writeFile(file, "not an ONNX model");
    const app = await startTestApp({ RETOUCH_INPAINTING_MODEL: file });
    try {
      const account = await keyedAccount(app, { plan: "pro", credits: 10 });
      expect((await waitForLog(app, /"msg":"active models"/)).models).toMatchObject({ inpainting: `file ${file}` });
      const before = (await app.services.profiles.get(account.userId)).credits;
      const { jobId, status } = await submit(app, account);
      expect(status).toMatchObject({ status: "error", credits_used: 0, credits_remaining: before });
      const failure = await waitForLog(app, new RegExp(`${jobId}.*job failed|job failed.*${jobId}`));
      expect(JSON.stringify(failure)).toMatch(/model_failed: The model .*lama\.onnx could not be loaded/);
    } finally {
      await app.close();
    }
  });
});
