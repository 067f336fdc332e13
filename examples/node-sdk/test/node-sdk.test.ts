import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { productPhoto } from "../../../test/support/images";
import { runExample } from "../../../test/support/run-example";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

let app: TestApp;
let scratch: string;
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-example-node-"));
}, 120_000);
afterAll(async () => {
  await app.close();
  await rm(scratch, { recursive: true, force: true });
});

it("edits a picture end to end", async () => {
  const { key } = await keyedAccount(app);
  const photo = path.join(scratch, "photo.jpg");
  const out = path.join(scratch, "cutout.png");
  await writeFile(photo, await productPhoto({ format: "jpeg" }));
  const run = await runExample("node-sdk", process.execPath, ["edit.mjs", photo, "remove the background", out], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/^saved .*cutout\.png: png 320x240, \d+ ms, 9 credits left$/m);
  expect(await sharp(out).metadata()).toMatchObject({ format: "png", hasAlpha: true });
});

it("reports the API's error code", async () => {
  const { key } = await keyedAccount(app, { credits: 0 });
  const photo = path.join(scratch, "photo.jpg");
  const run = await runExample("node-sdk", process.execPath, ["edit.mjs", photo, "remove the background"], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(run.code).toBe(1);
  expect(run.stderr).toContain("Retouch said insufficient_credits (402)");
});
