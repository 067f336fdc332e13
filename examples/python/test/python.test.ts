import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { productPhoto } from "../../../test/support/images";
import { runExample } from "../../../test/support/run-example";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

function hasPython(): boolean {
  try {
    execFileSync("python3", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

let app: TestApp;
let scratch: string;
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-example-python-"));
  await writeFile(path.join(scratch, "photo.png"), await productPhoto());
});
afterAll(async () => {
  await app.close();
  await rm(scratch, { recursive: true, force: true });
});

it.skipIf(!hasPython())("edits a picture with the standard library", async () => {
  const { key } = await keyedAccount(app);
  const out = path.join(scratch, "cutout");
  const run = await runExample("python", "python3", ["edit.py", path.join(scratch, "photo.png"), "remove the background", out], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/^job job_\w+, 9 credits left$/m);
  expect(run.stdout).toMatch(/saved .*cutout\.png: png 320x240/);
  expect(await sharp(`${out}.png`).metadata()).toMatchObject({ format: "png", hasAlpha: true });

  const refused = await runExample("python", "python3", ["edit.py", path.join(scratch, "photo.png"), "x"], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: "pk_wrong",
  });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("Retouch said unauthorized (401)");
});
