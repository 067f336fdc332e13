import { Retouch } from "@retouch/sdk";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, rectangleMask } from "../../../test/support/images";
import { jobCount } from "../../../test/support/jobs";
import { cameraJpeg, largePng } from "../../../test/support/large-images";
import { connectMcp } from "../../../test/support/mcp-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Images of the sizes people actually send, at the default limits (25 MiB
 * decoded, 100 MiB per request): a 12 MP camera JPEG and a 20 MB PNG. Their
 * base64 is far past the ~4.47 million characters where the old base64 check
 * overflowed the stack (500 internal_error).
 *
 * `app` runs workers (end-to-end edits); `api` does not, so what it accepts
 * stays pending and costs no CPU.
 */
let app: TestApp;
let api: TestApp;
let jpeg: Buffer;
let png: Buffer;
beforeAll(async () => {
  [app, api, jpeg, png] = await Promise.all([
    startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" }),
    startTestApp({}, { role: "api" }),
    cameraJpeg(),
    largePng(),
  ]);
}, 120_000);
afterAll(() => Promise.all([app?.close(), api?.close()]));

const balanceOf = async (target: TestApp, account: KeyedAccount) => (await target.services.profiles.get(account.userId)).credits;

/** Mean of each channel: equal when the image is grey. */
async function channelMeans(bytes: Buffer): Promise<number[]> {
  return (await sharp(bytes).stats()).channels.slice(0, 3).map((channel) => channel.mean);
}

it("builds realistic inputs: a 12 MP JPEG of 5-8 MB and a PNG of about 20 MB", async () => {
  expect(await sharp(jpeg).metadata()).toMatchObject({ format: "jpeg", width: 4000, height: 3000 });
  expect(jpeg.length).toBeGreaterThan(5_000_000);
  expect(jpeg.length).toBeLessThan(8_000_000);
  expect(png.length).toBeGreaterThan(18_000_000);
  expect(png.length).toBeLessThan(25 * 1024 * 1024);
  expect(base64(jpeg).length).toBeGreaterThan(4_470_000);
});

describe("over REST, edited end to end", () => {
  it.each([
    ["a 12 MP camera JPEG", () => jpeg, 4000, 3000],
    ["a 20 MB PNG", () => png, 3200, 2400],
  ])(
    "%s: accepted, made black and white at full size, downloaded",
    async (_label, image, width, height) => {
      const account = await keyedAccount(app);
      const colours = await channelMeans(image());
      expect(Math.max(...colours) - Math.min(...colours)).toBeGreaterThan(5);

      const submitted = await request(app.url, "POST", "/api/process", {
        key: account.key,
        body: { image: base64(image()), prompt: "make it black and white" },
      });
      expect(submitted.status, submitted.text).toBe(200);
      expect(submitted.body.credits_remaining).toBe(9);

      const status = await waitForJob(app.url, account.key, submitted.body.job_id, 180_000);
      expect(status).toMatchObject({ status: "done", width, height, format: "jpeg", credits_used: 1 });
      const result = await request(app.url, "GET", `/api/process/result?job_id=${submitted.body.job_id}`, { key: account.key });
      expect(result.status).toBe(200);
      const link = new URL(result.body.url);
      const download = await fetch(`${app.url}${link.pathname}${link.search}`);
      expect(download.status).toBe(200);
      const output = Buffer.from(await download.arrayBuffer());
      expect(await sharp(output).metadata()).toMatchObject({ format: "jpeg", width, height });
      const grey = await channelMeans(output);
      expect(Math.max(...grey) - Math.min(...grey)).toBeLessThan(1);
    },
    240_000,
  );
});

describe("accepted over every transport, single and batch, image and mask", () => {
  it("/trpc, through the SDK", async () => {
    const account = await keyedAccount(api);
    const client = new Retouch({ baseUrl: api.url, apiKey: account.key });
    const submission = await client.submit(jpeg, "make it black and white");
    expect(submission).toEqual({ job_id: expect.stringMatching(/^job_/), credits_remaining: 9 });
    expect(await client.status(submission.job_id)).toEqual({ status: "pending" });
  });

  it("MCP edit_image, with the official client, after listing the tools", async () => {
    const account = await keyedAccount(api);
    const client = await connectMcp(api.url, account.key, "large-images-test");
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain("edit_image");
      const result = (await client.callTool({
        name: "edit_image",
        arguments: { image: `data:image/jpeg;base64,${base64(jpeg)}`, prompt: "make it black and white" },
      })) as { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ text?: string }> };
      expect(result.isError, result.content[0]?.text).toBeFalsy();
      expect(result.structuredContent).toEqual({ job_id: expect.stringMatching(/^job_/), credits_remaining: 9 });
    } finally {
      await client.close();
    }
  });

  it("a REST batch of full-size images, one with a full-size mask, in the URL-safe alphabet too", async () => {
    const account = await keyedAccount(api, { plan: "starter" });
    const mask = await rectangleMask(4000, 3000, { left: 1500, top: 1000, width: 800, height: 600 });
    const response = await request(api.url, "POST", "/api/process", {
      key: account.key,
      body: {
        images: [
          { image: base64(jpeg), prompt: "make it black and white" },
          { image: jpeg.toString("base64url"), mask: base64(mask), prompt: "remove the object" },
          { image: base64(png), prompt: "rotate 90 degrees" },
        ],
      },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.jobs.map((job: { status: string }) => job.status)).toEqual(["pending", "pending", "pending"]);
    expect(response.body.credits_remaining).toBe(7);
  });
});

describe("camera files cut short", () => {
  it.each([
    ["the 12 MP JPEG", () => jpeg.subarray(0, Math.floor(jpeg.length * 0.7)), /JPEG file is truncated/],
    ["the 20 MB PNG", () => png.subarray(0, Math.floor(png.length / 2)), /PNG file is truncated/],
  ])("%s, truncated: 400 at submission, nothing charged, no job", async (_label, truncated, message) => {
    const account = await keyedAccount(api);
    const response = await request(api.url, "POST", "/api/process", {
      key: account.key,
      body: { image: base64(truncated()), prompt: "make it black and white" },
    });
    expect(response.status, response.text).toBe(400);
    expect(response.body).toMatchObject({ code: "invalid_request", message: expect.stringMatching(message) });
    expect(response.body.message).toMatch(/^image: /);
    expect(await balanceOf(api, account)).toBe(10);
    expect(await jobCount(api.config.databaseUrl as string, account.userId)).toBe(0);
  });
});
