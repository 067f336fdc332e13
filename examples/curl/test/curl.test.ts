import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount, uniqueEmail, verifyEmail } from "../../../test/support/accounts";
import { exampleFixture, runExample } from "../../../test/support/run-example";
import type { TestApp } from "../../../test/support/test-app";

let app: TestApp;
let scratch: string;
let photo: string;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ app, scratch, photo, close } = await exampleFixture("curl"));
});
afterAll(() => close());

it("runs the whole REST flow: sign up, wait for verification, key, edit, download", { timeout: 90_000 }, async () => {
  const email = uniqueEmail("curl");
  let verified = false;
  const out = path.join(scratch, "cutout.png");
  const run = await runExample(
    "curl",
    "bash",
    ["flow.sh", photo, "remove the background", out],
    { RETOUCH_BASE_URL: app.url, RETOUCH_EMAIL: email, RETOUCH_PASSWORD: "curl password 1" },
    (chunk) => {
      // The person opening the emailed link, while the script waits for it.
      if (!verified && chunk.includes("Open the verification link")) {
        verified = true;
        void verifyEmail(app.url, app.outboxDir, email);
      }
    },
  );
  expect(run.code, run.stderr + run.stdout).toBe(0);
  expect(run.stdout).toMatch(/3\. Created an API key \(shown once\): pk_/);
  expect(run.stdout).toMatch(/6\. Saved .*cutout\.png \(png, 320x240\)/);
  expect(await sharp(out).metadata()).toMatchObject({ format: "png", hasAlpha: true });
});

it("skips the account steps with RETOUCH_API_KEY, and stops on a failed job", async () => {
  const { key } = await keyedAccount(app);
  const ok = await runExample("curl", "bash", ["flow.sh", photo, "make it black and white", path.join(scratch, "bw")], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(ok.code, ok.stderr).toBe(0);
  expect(ok.stdout).not.toContain("Signing up");
  expect(ok.stdout).toMatch(/Saved .*bw\.jpeg \(jpeg, 320x240\)/);
  const failed = await runExample("curl", "bash", ["flow.sh", photo, "remove the giraffe"], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(failed.code).toBe(1);
  expect(failed.stderr).toContain("the job failed (its credit was refunded)");
});
