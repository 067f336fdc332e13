/**
 * What every hosted-provider adapter must do, run against msw handlers that
 * answer in the vendor's documented wire format: decode the answer to the
 * input's size, retry a 429 after its Retry-After, give up on 5xx after the
 * retries, tell a content-policy refusal apart, time out, open its breaker,
 * honour the mask, stop when cancelled, and never put the key or the
 * vendor's own error text in a message.
 */
import { readFile } from "node:fs/promises";
import { delay, type HttpHandler, HttpResponse, http, type JsonBodyType } from "msw";
import { type SetupServer, setupServer } from "msw/node";
import sharp from "sharp";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import type { GreyImage, RgbaImage } from "../../src/engine.ports";
import { EngineError } from "../../src/engine-error";
import type { GenerativeProviderOptions } from "../../src/providers/generative-provider";
import { createGenerativeProvider } from "../../src/providers/generative-providers";
import { resetCircuitBreakers, type UpstreamTuning } from "../../src/providers/upstream-call";

export const KEY = "sk-test-4f9d2c7e1b8a6035d9e4c1f7a2b3";
/** Text a vendor might put in an error body: it must never reach a message. */
export const VENDOR_TEXT = "upstream shard eu-west-7 exploded while holding";

/** An msw server for the file: unknown requests fail the test; handlers, listeners and breakers reset after each case. */
export function mswServer(): SetupServer {
  const server = setupServer();
  beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
  afterEach(() => {
    server.resetHandlers();
    server.events.removeAllListeners();
    resetCircuitBreakers();
  });
  afterAll(() => server.close());
  return server;
}

/** Small delays, so the retry tests wait milliseconds (Retry-After aside). */
export const TUNING: UpstreamTuning = { backoffBaseMs: 10, backoffMaxMs: 5_000, pollIntervalMs: 10 };

/** A real photograph (the cat, fixtures/README.md), at 320x200: an aspect no vendor answers in exactly. */
export async function photo(): Promise<RgbaImage> {
  const bytes = await readFile(new URL("../fixtures/cat.jpg", import.meta.url));
  const { data, info } = await sharp(bytes)
    .resize(320, 200, { fit: "cover" })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** The left half marked (255), the right half not. */
export function leftHalfMask(width: number, height: number): GreyImage {
  const data = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width / 2; x++) data[y * width + x] = 255;
  return { data, width, height };
}

/** What the vendor "made": a plain magenta picture of the given size, as PNG. */
export function answerPng(width = 1024, height = 1024): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 255, g: 0, b: 255 } } })
    .png()
    .toBuffer();
}

export async function pngInfo(bytes: Uint8Array): Promise<{ width: number; height: number; format: string; channels: number }> {
  const metadata = await sharp(bytes).metadata();
  return {
    width: metadata.width ?? 0,
    height: metadata.height ?? 0,
    format: metadata.format ?? "",
    channels: metadata.channels ?? 0,
  };
}

export function pixel(image: RgbaImage, x: number, y: number): number[] {
  const i = (y * image.width + x) * 4;
  return Array.from(image.data.subarray(i, i + 4));
}

export async function failureOf(promise: Promise<unknown>): Promise<EngineError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(EngineError);
  return error as EngineError;
}

export interface VendorSpec {
  options: Omit<GenerativeProviderOptions, "apiKey" | "timeoutMs" | "maxRetries">;
  /** The vendor's name in messages. */
  vendor: string;
  /** Where the edit is submitted: the endpoint the failure cases answer on. */
  submitUrl: string;
  /** Handlers that answer a successful edit with `answer`, counting nothing. */
  success(answer: Buffer): HttpHandler[];
  /** Handlers that answer the vendor's content-policy refusal. */
  refusal(): HttpHandler[];
  /** The vendor's documented JSON error body for a status, with the key and raw text planted in it. */
  errorBody(status: number): JsonBodyType;
}

/** The shared cases, registered in the calling describe block. */
export function providerContract(server: SetupServer, spec: VendorSpec): void {
  const provider = (overrides: Partial<GenerativeProviderOptions> = {}, tuning: UpstreamTuning = TUNING) =>
    createGenerativeProvider({ ...spec.options, apiKey: KEY, timeoutMs: 5_000, maxRetries: 2, ...overrides }, tuning);
  const task = async () => ({ image: await photo(), prompt: "make it a watercolour painting", maxPixels: 40_000_000 });

  function countSubmits(): { times: number[] } {
    const seen = { times: [] as number[] };
    server.events.on("request:start", ({ request }: { request: Request }) => {
      if (request.method === "POST" && request.url === spec.submitUrl) seen.times.push(performance.now());
    });
    return seen;
  }

  it("brings the vendor's fixed-size answer back to the input's exact size, and reports the wait", async () => {
    server.use(...spec.success(await answerPng(1024, 1024)));
    const adapter = provider();
    const edit = await adapter.edit(await task(), {});
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
    expect(pixel(edit.image, 160, 100)).toEqual([255, 0, 255, 255]);
    expect(edit.latencyMs).toBeGreaterThanOrEqual(0);
    expect(adapter.name).toBe(spec.options.provider);
  });

  it("with a mask, keeps the input's own pixels outside it", async () => {
    server.use(...spec.success(await answerPng(1024, 1024)));
    const input = await task();
    const edit = await provider().edit({ ...input, mask: leftHalfMask(320, 200) }, {});
    // Inside the mask (beyond the 2-pixel feather) the vendor's picture, outside it the input's pixels, exactly.
    expect(pixel(edit.image, 40, 100)).toEqual([255, 0, 255, 255]);
    for (const [x, y] of [
      [200, 20],
      [300, 180],
      [250, 100],
    ] as const) {
      expect(pixel(edit.image, x, y)).toEqual(pixel(input.image, x, y));
    }
  });

  it("retries a 429 after the Retry-After it gives, then answers", async () => {
    server.use(...spec.success(await answerPng(512, 512)));
    server.use(
      http.post(spec.submitUrl, () => HttpResponse.json(spec.errorBody(429), { status: 429, headers: { "retry-after": "1" } }), {
        once: true,
      }),
    );
    const seen = countSubmits();
    const edit = await provider().edit(await task(), {});
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
    expect(seen.times).toHaveLength(2);
    // Retry-After says one second; the backoff alone would have waited about 10 ms.
    expect((seen.times[1] ?? 0) - (seen.times[0] ?? 0)).toBeGreaterThanOrEqual(950);
    expect(edit.latencyMs).toBeGreaterThanOrEqual(950);
  });

  it("gives up on 5xx after the retries: upstream_failed, without the key or the vendor's text", async () => {
    server.use(http.post(spec.submitUrl, () => HttpResponse.json(spec.errorBody(503), { status: 503 })));
    const seen = countSubmits();
    const error = await failureOf(provider({ maxRetries: 2 }).edit(await task(), {}));
    expect(seen.times).toHaveLength(3);
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain(`The image provider (${spec.vendor}) failed (HTTP 503`);
    expect(error.message).toContain("tried 3 times");
    expect(error.message).not.toContain(KEY);
    expect(error.message).not.toContain(VENDOR_TEXT);
  });

  it("tells a content-policy refusal apart (content_refused, not retried)", async () => {
    server.use(...spec.refusal());
    const error = await failureOf(provider().edit(await task(), {}));
    expect(error.reason).toBe("content_refused");
    expect(error.message).toContain(`The image provider (${spec.vendor}) refused this prompt or picture`);
    expect(error.message).not.toContain(KEY);
    expect(error.message).not.toContain(VENDOR_TEXT);
  });

  it("ends an attempt that does not answer in time, and retries it", async () => {
    server.use(
      http.post(spec.submitUrl, async () => {
        await delay("infinite");
        return HttpResponse.json({});
      }),
    );
    const seen = countSubmits();
    const error = await failureOf(provider({ timeoutMs: 150, maxRetries: 1 }).edit(await task(), {}));
    expect(seen.times).toHaveLength(2);
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain(`The image provider (${spec.vendor}) did not answer within 1 s (tried 2 times)`);
  });

  it("opens its breaker after consecutive failures and then fails at once, without calling the vendor", async () => {
    server.use(http.post(spec.submitUrl, () => HttpResponse.json(spec.errorBody(500), { status: 500 })));
    const seen = countSubmits();
    const adapter = provider({ maxRetries: 0 }, { ...TUNING, breakerThreshold: 2, breakerCooldownMs: 60_000 });
    for (let i = 0; i < 2; i++) expect((await failureOf(adapter.edit(await task(), {}))).message).toContain("HTTP 500");
    const fast = await failureOf(adapter.edit(await task(), {}));
    expect(fast.reason).toBe("upstream_failed");
    expect(fast.message).toMatch(/failed 2 times in a row, so Retouch is not calling it for the next \d+ s/);
    expect(seen.times).toHaveLength(2);
  });

  it("stops when the job is cancelled", async () => {
    server.use(
      http.post(spec.submitUrl, async () => {
        await delay("infinite");
        return HttpResponse.json({});
      }),
    );
    const controller = new AbortController();
    server.events.on("request:start", () => setTimeout(() => controller.abort(), 20));
    const error = await failureOf(provider().edit(await task(), { signal: controller.signal }));
    expect(error.reason).toBe("cancelled");
  });

  it("refuses a wrong key without retrying it, and says so without the key", async () => {
    server.use(http.post(spec.submitUrl, () => HttpResponse.json(spec.errorBody(401), { status: 401 })));
    const seen = countSubmits();
    const error = await failureOf(provider().edit(await task(), {}));
    expect(seen.times).toHaveLength(1);
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain("refused the configured API key (HTTP 401");
    expect(error.message).not.toContain(KEY);
  });
}
