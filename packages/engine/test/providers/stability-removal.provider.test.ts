import { readFile } from "node:fs/promises";
import { type HttpHandler, HttpResponse, http } from "msw";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { ProviderRecord, RgbaImage, WorkContext } from "../../src/engine.ports";
import { sizeWithin } from "../../src/providers/provider-images";
import type { BackgroundProviderOptions } from "../../src/providers/removal-provider";
import { createBackgroundProvider, createObjectRemovalProvider } from "../../src/providers/removal-providers";
import { createImageEngine } from "../../src/workflows/engine";
import {
  answerPng,
  failureOf,
  KEY,
  leftHalfMask,
  mswServer,
  photo,
  pixel,
  pngInfo,
  TUNING,
  VENDOR_TEXT,
} from "./provider-contract";

/**
 * Stability AI's dedicated removal endpoints as documented (v2beta API
 * reference): multipart with `Authorization: Bearer` and `Accept:
 * application/json`; `{ image (base64), finish_reason, seed }` back; errors as
 * `{ id, name, errors: [...] }`, a moderated request as 403
 * `content_moderation`, a filtered output as `finish_reason: CONTENT_FILTERED`.
 * remove-background takes `image` and `output_format` (inputs of 64 px a side
 * and at most 4,194,304 pixels); erase takes `image`, `mask` (white = erase),
 * optional `grow_mask` and `output_format`, and answers at about 4 MP.
 */
const REMOVE_BACKGROUND = "https://api.stability.ai/v2beta/stable-image/edit/remove-background";
const ERASE = "https://api.stability.ai/v2beta/stable-image/edit/erase";
const server = mswServer();

const options: BackgroundProviderOptions = { provider: "stability", apiKey: KEY, timeoutMs: 5_000, maxRetries: 2 };
const background = (overrides: Partial<typeof options> = {}) => createBackgroundProvider({ ...options, ...overrides }, TUNING);
const eraser = (overrides: Partial<typeof options> = {}) => createObjectRemovalProvider({ ...options, ...overrides }, TUNING);

/** What remove-background "cut out": the picture's left half opaque (magenta), its right half transparent. */
function leftHalfCutOut(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 4, background: { r: 255, g: 0, b: 255, alpha: 0 } } })
    .composite([
      {
        input: { create: { width: Math.round(width / 2), height, channels: 4, background: { r: 255, g: 0, b: 255, alpha: 1 } } },
        left: 0,
        top: 0,
      },
    ])
    .png()
    .toBuffer();
}

const json = (image: Buffer, finish = "SUCCESS") =>
  HttpResponse.json({ image: image.toString("base64"), finish_reason: finish, seed: 7 });

interface Seen {
  auth: string | null;
  accept: string | null;
  fields: Record<string, string>;
  image?: File;
  mask?: File;
}

/** Answers `url` with `answer(upload width, height)`, keeping what each request carried. */
function vendor(url: string, answer: (width: number, height: number) => Promise<Buffer>): Seen[] {
  const seen: Seen[] = [];
  server.use(
    http.post(url, async ({ request }) => {
      const form = await request.formData();
      const image = form.get("image") as File;
      const mask = (form.get("mask") as File | null) ?? undefined;
      seen.push({
        auth: request.headers.get("authorization"),
        accept: request.headers.get("accept"),
        fields: Object.fromEntries(
          [...form.entries()].filter((entry): entry is [string, string] => typeof entry[1] === "string"),
        ),
        image,
        mask,
      });
      const { width, height } = await pngInfo(new Uint8Array(await image.arrayBuffer()));
      return json(await answer(width, height));
    }),
  );
  return seen;
}

function recorder(): { context: WorkContext; records: ProviderRecord[] } {
  const records: ProviderRecord[] = [];
  return { context: { recordProvider: (record) => records.push(record) }, records };
}

describe("Stability AI remove-background", () => {
  it("sends the picture as documented and makes a straight-alpha cut-out at the input's size from the answer's alpha", async () => {
    const seen = vendor(REMOVE_BACKGROUND, (width, height) => leftHalfCutOut(width / 2, height / 2));
    const input = await photo();
    const { context, records } = recorder();
    const cut = await background().removeBackground(input, context);
    const [request] = seen;
    expect(request?.auth).toBe(`Bearer ${KEY}`);
    expect(request?.accept).toBe("application/json");
    expect(request?.fields).toEqual({ output_format: "png" });
    // Within the endpoint's limits the picture goes at its own size.
    expect(await pngInfo(new Uint8Array((await request?.image?.arrayBuffer()) ?? new ArrayBuffer(0)))).toMatchObject({
      format: "jpeg",
      width: 320,
      height: 200,
    });
    expect(request?.mask).toBeUndefined();
    // The answer came at half the size: the cut-out is at the input's, its colours the input's own (not the answer's magenta).
    expect([cut.width, cut.height]).toEqual([320, 200]);
    expect(pixel(cut, 40, 100)).toEqual(pixel(input, 40, 100));
    expect(pixel(cut, 280, 100)[3]).toBe(0);
    expect(records).toEqual([{ name: "stability", model: "remove-background", latencyMs: expect.any(Number) }]);
  });

  it("scales a picture beyond the endpoint's limits into them (at most 4,194,304 pixels, every side at least 64)", () => {
    const big = sizeWithin({ width: 4240, height: 2832 }, { maxPixels: 4_194_304, minSide: 64 });
    expect(big.width * big.height).toBeLessThanOrEqual(4_194_304);
    expect(big.width / big.height).toBeCloseTo(4240 / 2832, 2);
    expect(sizeWithin({ width: 40, height: 300 }, { maxPixels: 4_194_304, minSide: 64 })).toEqual({ width: 64, height: 480 });
    expect(sizeWithin({ width: 1224, height: 816 }, { maxPixels: 4_194_304, minSide: 64 })).toEqual({ width: 1224, height: 816 });
  });

  it("an output Stability's filter caught is content_refused", async () => {
    server.use(http.post(REMOVE_BACKGROUND, () => HttpResponse.json({ image: "", finish_reason: "CONTENT_FILTERED", seed: 1 })));
    const error = await failureOf(background().removeBackground(await photo(), {}));
    expect(error.reason).toBe("content_refused");
  });
});

describe("Stability AI erase", () => {
  it("sends the mask white where to erase, widened a little, and keeps every pixel outside it the input's", async () => {
    // Erase answers at about 4 MP whatever it was sent: here a plain magenta picture of another size.
    const seen = vendor(ERASE, () => answerPng(1024, 640));
    const input = await photo();
    const { context, records } = recorder();
    const result = await eraser().removeObjects(
      { image: input, mask: leftHalfMask(320, 200), terms: [], prompt: "remove this" },
      context,
    );
    const [request] = seen;
    expect(request?.auth).toBe(`Bearer ${KEY}`);
    expect(request?.fields).toEqual({ output_format: "png" });
    const mask = new Uint8Array((await request?.mask?.arrayBuffer()) ?? new ArrayBuffer(0));
    expect(await pngInfo(mask)).toEqual({ width: 320, height: 200, format: "png", channels: 1 });
    const { data } = await sharp(mask).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
    // Marked: x < 160, widened by 3 px; nothing beyond.
    expect([data[100 * 320 + 100], data[100 * 320 + 162], data[100 * 320 + 163], data[100 * 320 + 250]]).toEqual([
      255, 255, 0, 0,
    ]);
    expect([result.width, result.height]).toEqual([320, 200]);
    expect(pixel(result, 80, 100)).toEqual([255, 0, 255, 255]);
    // Past the widened mask and its 2 px feather, every byte is the input's.
    for (let y = 0; y < 200; y++) {
      for (let x = 166; x < 320; x++) {
        const i = (y * 320 + x) * 4;
        if (result.data.subarray(i, i + 4).some((value, c) => value !== input.data[i + c])) {
          throw new Error(`pixel ${x},${y} changed outside the mask`);
        }
      }
    }
    expect(records).toEqual([{ name: "stability", model: "erase", latencyMs: expect.any(Number) }]);
  });
});

/** The failure cases both endpoints share, with Stability's documented error bodies. */
const ports: { name: string; url: string; run: (overrides?: Partial<typeof options>) => Promise<RgbaImage> }[] = [
  { name: "remove-background", url: REMOVE_BACKGROUND, run: async (o) => background(o).removeBackground(await photo(), {}) },
  {
    name: "erase",
    url: ERASE,
    run: async (o) =>
      eraser(o).removeObjects({ image: await photo(), mask: leftHalfMask(320, 200), terms: [], prompt: "remove this" }, {}),
  },
];

const errorBody = (name: string) => ({ id: "e1", name, errors: [`${VENDOR_TEXT} ${KEY}`] });

function counted(handler: HttpHandler, url: string): number[] {
  const times: number[] = [];
  server.events.on("request:start", ({ request }) => {
    if (request.method === "POST" && request.url === url) times.push(performance.now());
  });
  server.use(handler);
  return times;
}

describe.each(ports)("Stability AI $name, failures", ({ url, run }) => {
  it("retries a 429 after the Retry-After it gives, then answers", async () => {
    vendor(url, (width, height) => leftHalfCutOut(width, height));
    const times = counted(
      http.post(
        url,
        () => HttpResponse.json(errorBody("rate_limit_exceeded"), { status: 429, headers: { "retry-after": "1" } }),
        {
          once: true,
        },
      ),
      url,
    );
    const result = await run();
    expect([result.width, result.height]).toEqual([320, 200]);
    expect(times).toHaveLength(2);
    // Retry-After says one second; the backoff alone would have waited about 10 ms.
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it("gives up on 5xx after the retries: upstream_failed, without the key or Stability's text", async () => {
    const times = counted(
      http.post(url, () => HttpResponse.json(errorBody("internal_error"), { status: 500 })),
      url,
    );
    const error = await failureOf(run({ maxRetries: 1 }));
    expect(times).toHaveLength(2);
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain("The image provider (Stability AI) failed (HTTP 500, code internal_error, tried 2 times)");
    expect(error.message).not.toContain(KEY);
    expect(error.message).not.toContain(VENDOR_TEXT);
  });

  it("a moderated request (403 content_moderation) is content_refused, not retried, and not a refused key", async () => {
    const times = counted(
      http.post(url, () => HttpResponse.json(errorBody("content_moderation"), { status: 403 })),
      url,
    );
    const error = await failureOf(run());
    expect(times).toHaveLength(1);
    expect(error.reason).toBe("content_refused");
    expect(error.message).toContain("The image provider (Stability AI) refused this prompt or picture");
    expect(error.message).not.toContain(KEY);
    expect(error.message).not.toContain(VENDOR_TEXT);
  });

  it("a refused key (401) is upstream_failed without the key", async () => {
    counted(
      http.post(url, () => HttpResponse.json(errorBody("unauthorized"), { status: 401 })),
      url,
    );
    const error = await failureOf(run());
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain("refused the configured API key (HTTP 401");
    expect(error.message).not.toContain(KEY);
  });
});

describe("through the engine", () => {
  const stability = { provider: "stability", apiKey: KEY, maxRetries: 0 } as const;
  const dog = () => readFile(new URL("../fixtures/dog.jpg", import.meta.url));

  it('"remove the background" goes to remove-background when configured, and the result says so', async () => {
    const seen = vendor(REMOVE_BACKGROUND, (width, height) => leftHalfCutOut(width, height));
    const input = await dog();
    const { width = 0, height = 0 } = await sharp(input).metadata();
    const result = await createImageEngine({ backgroundProvider: stability }).edit({
      image: input,
      prompt: "remove the background",
    });
    expect(seen).toHaveLength(1);
    expect(result).toMatchObject({ workflow: "background_removal", format: "png", width, height });
    expect(result.provider).toEqual({ name: "stability", model: "remove-background", latencyMs: expect.any(Number) });
    const { data } = await sharp(result.image).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const alpha = (x: number, y: number) => data[(y * width + x) * 4 + 3];
    expect([alpha(10, height >> 1), alpha(width - 10, height >> 1)]).toEqual([255, 0]);
  });

  it("the catalog's steps built on the cut-out use it too (a new background colour)", async () => {
    const seen = vendor(REMOVE_BACKGROUND, (width, height) => leftHalfCutOut(width, height));
    const input = await dog();
    const { width = 0, height = 0 } = await sharp(input).metadata();
    const result = await createImageEngine({ backgroundProvider: stability }).edit({
      image: input,
      prompt: "put it on a white background",
      format: "png",
    });
    expect(seen).toHaveLength(1);
    expect(result.provider).toMatchObject({ name: "stability", model: "remove-background" });
    const { data } = await sharp(result.image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const i = ((height >> 1) * width + width - 10) * 3;
    expect(Array.from(data.subarray(i, i + 3))).toEqual([255, 255, 255]);
  });

  it("without the setting, background removal stays built in and nothing is sent", async () => {
    const seen = vendor(REMOVE_BACKGROUND, (width, height) => leftHalfCutOut(width, height));
    // The apple: a product shot the classical segmenter cuts out (the dog needs a learned model or the vendor).
    const apple = await readFile(new URL("../fixtures/apple.jpg", import.meta.url));
    const result = await createImageEngine().edit({ image: apple, prompt: "remove the background" });
    expect(seen).toHaveLength(0);
    expect(result.provider).toBeUndefined();
  });

  it('a masked "remove this" goes to erase; the result carries the record', async () => {
    const seen = vendor(ERASE, () => answerPng(1024, 1024));
    const input = await dog();
    const { width = 0, height = 0 } = await sharp(input).metadata();
    const mask = await sharp({ create: { width, height, channels: 3, background: "black" } })
      .composite([{ input: { create: { width: 60, height: 40, channels: 3, background: "white" } }, left: 20, top: 20 }])
      .png()
      .toBuffer();
    const result = await createImageEngine({ objectRemovalProvider: stability }).edit({
      image: input,
      prompt: "remove this",
      mask,
      format: "png",
    });
    expect(seen).toHaveLength(1);
    expect(result).toMatchObject({ workflow: "object_removal", width, height });
    expect(result.provider).toEqual({ name: "stability", model: "erase", latencyMs: expect.any(Number) });
    const { data } = await sharp(result.image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const i = (40 * width + 50) * 3;
    expect(Array.from(data.subarray(i, i + 3))).toEqual([255, 0, 255]);
  });

  it('an unmasked "remove the person" stays on the built-in detector and inpainter', async () => {
    const seen = vendor(ERASE, () => answerPng(1024, 1024));
    const portrait = await sharp(await readFile(new URL("../fixtures/astronaut.jpg", import.meta.url)))
      .resize(220)
      .toBuffer();
    const scene = await sharp(await readFile(new URL("../fixtures/gravel.jpg", import.meta.url)))
      .resize(640, 512)
      .composite([{ input: portrait, left: 300, top: 200 }])
      .jpeg()
      .toBuffer();
    const result = await createImageEngine({ objectRemovalProvider: stability }).edit({
      image: scene,
      prompt: "remove the person",
    });
    expect(seen).toHaveLength(0);
    expect(result).toMatchObject({ workflow: "object_removal", width: 640, height: 512 });
    expect(result.provider).toBeUndefined();
  });
});
