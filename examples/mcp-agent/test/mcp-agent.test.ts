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
  scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-example-mcp-"));
  await writeFile(path.join(scratch, "photo.png"), await productPhoto());
});
afterAll(async () => {
  await app.close();
  await rm(scratch, { recursive: true, force: true });
});

it("edits through the MCP tools and downloads the signed result", async () => {
  const { key } = await keyedAccount(app);
  const out = path.join(scratch, "cutout.png");
  const run = await runExample(
    "mcp-agent",
    process.execPath,
    ["agent.mjs", path.join(scratch, "photo.png"), "remove the background", out],
    {
      RETOUCH_BASE_URL: app.url,
      RETOUCH_API_KEY: key,
    },
  );
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain("tools: edit_image, get_job_status, get_job_result");
  expect(run.stdout).toMatch(/job job_\w+ started; 9 credits left/);
  expect(await sharp(out).metadata()).toMatchObject({ format: "png", hasAlpha: true });

  const failed = await runExample(
    "mcp-agent",
    process.execPath,
    ["agent.mjs", path.join(scratch, "photo.png"), "remove the giraffe"],
    {
      RETOUCH_BASE_URL: app.url,
      RETOUCH_API_KEY: key,
    },
  );
  expect(failed.code).toBe(1);
  expect(failed.stderr).toContain("its credit was refunded");
});
