import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { exampleFixture, runExample } from "../../../test/support/run-example";
import type { TestApp } from "../../../test/support/test-app";

let app: TestApp;
let scratch: string;
let photo: string;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ app, scratch, photo, close } = await exampleFixture("mcp"));
});
afterAll(() => close());

it("edits through the MCP tools and downloads the signed result", async () => {
  const { key } = await keyedAccount(app);
  const out = path.join(scratch, "cutout.png");
  const run = await runExample("mcp-agent", process.execPath, ["agent.mjs", photo, "remove the background", out], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain("tools: edit_image, get_job_status, get_job_result");
  expect(run.stdout).toMatch(/job job_\w+ started; 9 credits left/);
  expect(await sharp(out).metadata()).toMatchObject({ format: "png", hasAlpha: true });

  const failed = await runExample("mcp-agent", process.execPath, ["agent.mjs", photo, "remove the giraffe"], {
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: key,
  });
  expect(failed.code).toBe(1);
  expect(failed.stderr).toContain(
    "the edit failed (nothing_detected): No giraffe was found in the image. Its credit was refunded.",
  );
});
