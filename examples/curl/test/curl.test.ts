import { execFile } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount, uniqueEmail, verifyEmail } from "../../../test/support/accounts";
import { exampleFixture, examplesDir, runExample } from "../../../test/support/run-example";
import type { TestApp } from "../../../test/support/test-app";

// A product-style photo: the tests run without a learned model, and the classical segmenter refuses portraits.
const applePhoto = fileURLToPath(new URL("../../../packages/engine/test/fixtures/apple.jpg", import.meta.url));

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

it("the README's curl walk-through (steps 5-6) edits a real photo", { timeout: 90_000 }, async () => {
  // The block of the README that starts at `KEY=pk_...`, run as written, with the key and base URL filled in.
  const readme = await readFile(path.join(examplesDir, "..", "README.md"), "utf8");
  const block = readme.split("```sh\n").find((candidate) => candidate.startsWith("KEY=pk_"));
  expect(block, "the README has the block of steps 5 and 6").toBeDefined();
  const script = (block as string).split("\n```")[0]?.replace(/^KEY=pk_.*$/m, "") ?? "";
  // A real photograph, large enough (≈0.5 MB of base64) that an argument list would overflow.
  const real = path.join(scratch, "photo.jpg");
  await sharp(applePhoto).resize(1600, 1600).jpeg({ quality: 95 }).toFile(real);
  expect((await stat(real)).size * 4 > 3 * 200_000).toBe(true);
  const { key } = await keyedAccount(app);
  const run = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      "bash",
      ["-euo", "pipefail", "-c", script],
      { cwd: scratch, env: { PATH: process.env.PATH ?? "", BASE: app.url, KEY: key }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, output: stdout + stderr }),
    );
  });
  expect(run.code, run.output).toBe(0);
  expect(await sharp(path.join(scratch, "result.png")).metadata()).toMatchObject({
    format: "png",
    hasAlpha: true,
    width: 1600,
    height: 1600,
  });
});
