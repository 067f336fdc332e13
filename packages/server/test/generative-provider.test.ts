import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import sharp from "sharp";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * A job through a hosted provider, end to end: the real service (HTTP,
 * PostgreSQL, the queue, the engine's threads) configured with
 * RETOUCH_GENERATIVE_PROVIDER=openai-compatible against a real HTTP server
 * on loopback that implements `POST /v1/images/edits` the way OpenAI
 * documents it (multipart in, `{ data: [{ b64_json }] }` out).
 */

/** What the self-hosted model "paints": a teal square, whatever it was asked. */
const PAINT = { r: 0, g: 128, b: 128 };

interface EditsServer {
  url: string;
  requests: { prompt: string; model: string | null; imageType: string }[];
  /** The status the next answers have: 200 with an image, or an error. */
  status: number;
  close(): Promise<void>;
}

async function startEditsServer(): Promise<EditsServer> {
  const state: EditsServer = { url: "", requests: [], status: 200, close: async () => undefined };
  const painted = (
    await sharp({ create: { width: 1024, height: 1024, channels: 3, background: PAINT } })
      .png()
      .toBuffer()
  ).toString("base64");
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "POST" || req.url !== "/v1/images/edits") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }));
      return;
    }
    // The multipart body read as a browser would: the server checks it is what /v1/images/edits takes.
    const form = await new Request(`http://127.0.0.1${req.url}`, {
      method: "POST",
      headers: req.headers as Record<string, string>,
      body: Readable.toWeb(req) as ReadableStream,
      duplex: "half",
    } as RequestInit).formData();
    const image = form.get("image");
    state.requests.push({
      prompt: String(form.get("prompt")),
      model: form.get("model") as string | null,
      imageType: image instanceof File ? image.type : "none",
    });
    if (state.status !== 200) {
      res
        .writeHead(state.status, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { message: "the GPU fell over", type: "server_error", code: null } }));
      return;
    }
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ created: Math.floor(Date.now() / 1000), data: [{ b64_json: painted }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  state.close = () => new Promise((resolve) => server.close(() => resolve()));
  return state;
}

let edits: EditsServer;
let app: TestApp;
let account: KeyedAccount;

beforeAll(async () => {
  edits = await startEditsServer();
  app = await startTestApp({
    RETOUCH_GENERATIVE_PROVIDER: "openai-compatible",
    RETOUCH_OPENAI_BASE_URL: edits.url,
    RETOUCH_WORKER_CONCURRENCY: "1",
  });
  account = await keyedAccount(app, { plan: "pro", credits: 50 });
});
afterAll(async () => {
  await app?.close();
  await edits?.close();
});
beforeEach(() => {
  edits.status = 200;
});

async function submitAndWait(prompt: string) {
  const submitted = await request(app.url, "POST", "/api/process", {
    key: account.key,
    body: { image: base64(await productPhoto({ width: 320, height: 240 })), prompt, format: "png" },
  });
  expect(submitted.status, submitted.text).toBe(200);
  const jobId = submitted.body.job_id as string;
  return { jobId, status: await waitForJob(app.url, account.key, jobId) };
}

describe("a generative job through an openai-compatible server", () => {
  it("the start-up log names where generative prompts go, without a key", () => {
    const active = app.logs.find((line) => line.includes('"msg":"active models"')) ?? "";
    expect(JSON.parse(active).models.generative).toBe(
      `built-in catalog, then openai-compatible at ${edits.url} (its default model)`,
    );
  });

  it("a prompt the catalog does not know is made by the server: its picture, at the input's size", async () => {
    const before = edits.requests.length;
    const { jobId, status } = await submitAndWait("make it a watercolour painting");
    expect(status).toMatchObject({ status: "done", width: 320, height: 240, format: "png", credits_used: 1 });
    // The job records who made it.
    expect(status).toMatchObject({ provider: "openai-compatible", upstream_latency_ms: expect.any(Number) });
    expect(edits.requests.slice(before)).toEqual([
      { prompt: "make it a watercolour painting", model: null, imageType: "image/jpeg" },
    ]);
    const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
    expect(result.status, result.text).toBe(200);
    const file = await fetch(result.body.url.replace(app.config.publicBaseUrl, app.url));
    const { data, info } = await sharp(Buffer.from(await file.arrayBuffer()))
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([320, 240]);
    // Every pixel is the server's teal: the input's red disc and light background are gone.
    for (const [x, y] of [
      [160, 120],
      [5, 5],
      [314, 234],
    ] as const) {
      const i = (y * info.width + x) * 3;
      expect([data[i], data[i + 1], data[i + 2]]).toEqual([PAINT.r, PAINT.g, PAINT.b]);
    }
  });

  it("a catalog instruction never reaches the server", async () => {
    const before = edits.requests.length;
    const { status } = await submitAndWait("make it black and white");
    expect(status).toMatchObject({ status: "done", width: 320, height: 240 });
    expect(edits.requests.length).toBe(before);
  });

  it("the server's 500 ends the job in error, with the credit refunded", async () => {
    edits.status = 500;
    const balance = (await app.services.profiles.get(account.userId)).credits;
    const before = edits.requests.length;
    const { jobId, status } = await submitAndWait("put a hat on the dog");
    expect(status).toMatchObject({ status: "error", error: "Processing failed", credits_used: 0, credits_remaining: balance });
    // The caller is told why, in Retouch's words, never the server's.
    expect(status.error_code).toBe("upstream_failed");
    expect(status.error_message).toMatch(/image provider/);
    expect(status.error_message).not.toContain("the GPU fell over");
    // The first try and the two retries (with backoff) reached the server.
    expect(edits.requests.length - before).toBe(3);
    expect((await app.services.profiles.get(account.userId)).credits).toBe(balance);
    const ledger = (await app.services.stores.profiles.ledger(account.userId)).filter((row) => row.jobId === jobId);
    expect(ledger.map((row) => [row.reason, row.delta])).toEqual([
      ["job_debit", -1],
      ["job_refund", 1],
    ]);
    // The operator reads why in the log: the reason and a sentence, without the server's own text.
    const failure = app.logs.find((line) => line.includes(jobId) && line.includes("job failed")) ?? "";
    expect(failure).toContain("upstream_failed");
    expect(failure).toContain(
      "The image provider (OpenAI-compatible server) failed (HTTP 500, code server_error, tried 3 times)",
    );
    expect(failure).not.toContain("the GPU fell over");
  });
});
