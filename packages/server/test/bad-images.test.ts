import { readFile } from "node:fs/promises";
import { ApiError, Retouch } from "@retouch/sdk";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, rectangleMask } from "../../../test/support/images";
import { jobCount } from "../../../test/support/jobs";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Damaged files and broken base64 are refused at submission, over real HTTP:
 * 400 (413 when too large), a message naming the field, no credit taken and
 * no job created. The API role only: nothing is processed.
 */
const MAX_IMAGE_BYTES = 1024 * 1024;
let app: TestApp;
let photo: Buffer;
let files: { jpeg: Buffer; png: Buffer; webp: Buffer };
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_MAX_IMAGE_BYTES: String(MAX_IMAGE_BYTES) }, { role: "api" });
  // A real photograph (CC0, scikit-image's sample data), in each input format.
  photo = await readFile(new URL("../../engine/test/fixtures/coffee.jpg", import.meta.url));
  files = {
    jpeg: photo,
    png: await sharp(photo).png().toBuffer(),
    webp: await sharp(photo).webp().toBuffer(),
  };
});
afterAll(() => app.close());

const submit = (account: KeyedAccount, body: unknown) => request(app.url, "POST", "/api/process", { key: account.key, body });

async function expectNothingChanged(account: KeyedAccount) {
  expect((await app.services.profiles.get(account.userId)).credits).toBe(10);
  expect(await jobCount(app.config.databaseUrl as string, account.userId)).toBe(0);
}

function damaged(bytes: Buffer, at: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[at] = (copy[at] ?? 0) ^ 0x5a;
  return copy;
}

describe("damaged images", () => {
  const cases: Array<[string, () => Promise<Record<string, unknown>>, RegExp]> = [
    ["a JPEG cut short", async () => ({ image: base64(files.jpeg.subarray(0, -300)) }), /^image: The JPEG file is truncated/],
    [
      "a JPEG missing only its last 2 bytes",
      async () => ({ image: base64(files.jpeg.subarray(0, -2)) }),
      /JPEG file is truncated/,
    ],
    ["a PNG cut short", async () => ({ image: base64(files.png.subarray(0, -5000)) }), /^image: The PNG file is truncated/],
    ["a WebP cut short", async () => ({ image: base64(files.webp.subarray(0, -100)) }), /^image: The WebP file is truncated/],
    [
      "a JPEG whose segments are broken",
      async () => ({ image: base64(damaged(files.jpeg, 4 + files.jpeg.readUInt16BE(4))) }),
      /^image: The image is damaged: no JPEG marker/,
    ],
    [
      "a PNG with one damaged byte in its image data",
      async () => ({ image: base64(damaged(files.png, Math.floor(files.png.length / 2))) }),
      /^image: The image is damaged: the PNG chunk IDAT .* fails its checksum/,
    ],
    [
      "a damaged mask",
      async () => {
        const mask = await rectangleMask(400, 600, { left: 10, top: 10, width: 50, height: 50 });
        return { image: base64(photo), mask: base64(mask.subarray(0, -20)) };
      },
      /^mask: The PNG file is truncated/,
    ],
  ];
  it.each(cases)("%s: 400 naming the problem, nothing charged, no job", async (_label, body, message) => {
    const account = await keyedAccount(app);
    const response = await submit(account, { prompt: "make it black and white", ...(await body()) });
    expect(response.status, response.text).toBe(400);
    expect(response.body).toMatchObject({ code: "invalid_request", message: expect.stringMatching(message) });
    await expectNothingChanged(account);
  });

  it("the same refusal over /trpc (the SDK)", async () => {
    const account = await keyedAccount(app);
    const client = new Retouch({ baseUrl: app.url, apiKey: account.key });
    const error = await client.submit(files.png.subarray(0, -5000), "make it black and white").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      code: "invalid_request",
      status: 400,
      message: expect.stringMatching(/PNG file is truncated/),
    });
    await expectNothingChanged(account);
  });
});

describe("base64", () => {
  const text = () => base64(photo);
  const cases: Array<[string, () => Record<string, unknown>, RegExp]> = [
    [
      "a character outside both alphabets, mid-text",
      () => ({ image: `${text().slice(0, 4000)}!${text().slice(4001)}` }),
      /^image: is not valid base64/,
    ],
    [
      "a bad character in the last group",
      () => ({ image: `${text().slice(0, -4)}@${text().slice(-3)}` }),
      /^image: is not valid base64/,
    ],
    ["line breaks (MIME-wrapped base64)", () => ({ image: text().replace(/(.{76})/g, "$1\n") }), /^image: is not valid base64/],
    ["padding in the middle", () => ({ image: `QUI=${text()}` }), /^image: is not valid base64/],
    [
      "a lone character in the last group",
      () => {
        const bare = text().replace(/=+$/, "");
        return { image: `${bare}${"A".repeat((5 - (bare.length % 4)) % 4 || 4)}` };
      },
      /^image: is not valid base64/,
    ],
    [
      "a data: URL that is not an image",
      () => ({ image: `data:text/plain;base64,${text()}` }),
      /^image: a data: URL must start with data:image/,
    ],
    ["a mask that is not base64", () => ({ image: text(), mask: "%%%%" }), /^mask: is not valid base64/],
    [
      "bytes that are no image",
      () => ({ image: base64(Buffer.from("just some text, not a picture")) }),
      /^image: .*JPEG, PNG or WebP/,
    ],
  ];
  it.each(cases)("%s: 400, nothing charged, no job", async (_label, body, message) => {
    const account = await keyedAccount(app);
    const response = await submit(account, { prompt: "make it black and white", ...body() });
    expect(response.status, response.text).toBe(400);
    expect(response.body).toMatchObject({ code: "invalid_request", message: expect.stringMatching(message) });
    await expectNothingChanged(account);
  });

  it("accepts the URL-safe alphabet, missing padding, and a data: prefix", async () => {
    const account = await keyedAccount(app, { plan: "pro" });
    for (const image of [
      photo.toString("base64url"),
      text().replace(/=+$/, ""),
      `data:image/jpeg;base64,${text()}`,
      `data:image/jpeg;charset=binary;base64,${text()}`,
    ]) {
      const response = await submit(account, { image, prompt: "make it black and white" });
      expect(response.status, response.text).toBe(200);
    }
  });
});

describe("size", () => {
  const tooLarge = () =>
    sharp({
      create: {
        width: 1100,
        height: 1100,
        channels: 3,
        background: "#808080",
        noise: { type: "gaussian", mean: 128, sigma: 60 },
      },
    })
      .png()
      .toBuffer();

  it("answers 413 for an image over RETOUCH_MAX_IMAGE_BYTES, before decoding it", async () => {
    const account = await keyedAccount(app);
    const big = await tooLarge();
    expect(big.length).toBeGreaterThan(MAX_IMAGE_BYTES);
    const response = await submit(account, { image: base64(big), prompt: "make it black and white" });
    expect(response.status, response.text).toBe(413);
    expect(response.body).toMatchObject({
      code: "payload_too_large",
      message: `image: the decoded image is ${big.length} bytes; the limit is ${MAX_IMAGE_BYTES}`,
    });
    await expectNothingChanged(account);
  });

  it("lists an oversized or damaged batch item with its reason and starts the others", async () => {
    const account = await keyedAccount(app);
    const response = await submit(account, {
      images: [
        { image: base64(photo), prompt: "make it black and white" },
        { image: base64(await tooLarge()), prompt: "make it black and white" },
        { image: base64(files.jpeg.subarray(0, -300)), prompt: "make it black and white" },
      ],
    });
    expect(response.status, response.text).toBe(200);
    const jobs = response.body.jobs as Array<{ status: string; error?: string }>;
    expect(jobs.map((job) => job.status)).toEqual(["pending", "error", "error"]);
    expect(jobs[1]?.error).toMatch(/^image: the decoded image is \d+ bytes; the limit is/);
    expect(jobs[2]?.error).toMatch(/^image: The JPEG file is truncated/);
    expect(response.body.credits_remaining).toBe(9);
  });
});
