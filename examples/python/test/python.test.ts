import { execFileSync } from "node:child_process";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { exampleFixture, runExample } from "../../../test/support/run-example";
import type { TestApp } from "../../../test/support/test-app";

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
let photo: string;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ app, scratch, photo, close } = await exampleFixture("python"));
});
afterAll(() => close());

it.skipIf(!hasPython())("edits a picture with the standard library", async () => {
  const { key } = await keyedAccount(app);
  const out = path.join(scratch, "cutout");
  const run = await runExample("python", "python3", ["edit.py", photo, "remove the background", out], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/^job job_\w+, 9 credits left$/m);
  expect(run.stdout).toMatch(/saved .*cutout\.png: png 320x240/);
  expect(await sharp(`${out}.png`).metadata()).toMatchObject({ format: "png", hasAlpha: true });

  const refused = await runExample("python", "python3", ["edit.py", photo, "x"], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: "pk_wrong",
  });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("Retouch said unauthorized (401)");
});
