import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { announceUpload, rawUpload } from "../../../test/support/raw-upload";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * POST /api/process with `multipart/form-data`, as curl's `-F` sends it, over
 * real HTTP against the whole service (workers included): the upload becomes
 * a job that completes, and every refusal comes from the same checks as
 * base64 in JSON, before or while the body is read, charging nothing.
 */

const MAX_IMAGE_BYTES = 512 * 1024;
const MAX_REQUEST_BYTES = 2 * 1024 * 1024;
const NINETY_MB = 90 * 1024 * 1024;

let app: TestApp;
let account: KeyedAccount;
let png: Buffer;
beforeAll(async () => {
  app = await startTestApp({
    RETOUCH_MAX_IMAGE_BYTES: String(MAX_IMAGE_BYTES),
    RETOUCH_MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES),
    RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
  });
  account = await keyedAccount(app, { plan: "pro", credits: 100 });
  png = await productPhoto();
});
afterAll(() => app.close());

const balance = async () => (await app.services.profiles.get(account.userId)).credits;

type Part = { name: string; value: string } | { name: string; file: Buffer; filename: string; type?: string };

const BOUNDARY = "------------------------d74496d66958873e";

/** A body as curl's `-F` writes it, byte for byte: CRLF lines, a file part with its filename and type. */
function curlBody(parts: Part[]): Buffer {
  const pieces: Buffer[] = [];
  for (const part of parts) {
    let head = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if ("file" in part) head += `; filename="${part.filename}"\r\nContent-Type: ${part.type ?? "application/octet-stream"}`;
    pieces.push(Buffer.from(`${head}\r\n\r\n`), "file" in part ? part.file : Buffer.from(part.value), Buffer.from("\r\n"));
  }
  pieces.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(pieces);
}

const submitParts = (parts: Part[], key = account.key) =>
  request(app.url, "POST", "/api/process", {
    key,
    headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
    rawBody: curlBody(parts),
  });

describe("multipart/form-data uploads: happy", () => {
  it("makes a job from a FormData upload (fetch's own encoding) that completes as asked", async () => {
    const before = await balance();
    const form = new FormData();
    form.set("image", new Blob([new Uint8Array(png)], { type: "image/png" }), "photo.png");
    form.set("prompt", "make it black and white");
    form.set("format", "webp");
    form.set("quality", "80");
    const response = await fetch(`${app.url}/api/process`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}` },
      body: form,
    });
    const body = (await response.json()) as { job_id: string; credits_remaining: number };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.credits_remaining).toBe(before - 1);
    expect(response.headers.get("x-ratelimit-limit")).toBe("120");
    const settled = await waitForJob(app.url, account.key, body.job_id);
    expect(settled).toMatchObject({ status: "done", format: "webp", width: 320, height: 240 });
  });

  it("takes curl -F's bytes (a hand-built body) the same way, with a mask part", async () => {
    const response = await submitParts([
      { name: "image", file: png, filename: "photo.png", type: "image/png" },
      { name: "prompt", value: "make it a lot brighter" },
      { name: "mask", file: png, filename: "mask.png", type: "image/png" },
    ]);
    expect(response.status, response.text).toBe(200);
    const settled = await waitForJob(app.url, account.key, response.body.job_id);
    expect(settled.status).toBe("done");
  });
});

describe("multipart/form-data uploads: refusals, nothing charged", () => {
  it.each<[string, Part[], number, string, RegExp]>([
    [
      "no image part",
      [{ name: "prompt", value: "sepia" }],
      400,
      "invalid_request",
      /^image: is required: send the picture as a file part/,
    ],
    [
      "the picture as a text part",
      [
        { name: "image", value: "not a file" },
        { name: "prompt", value: "sepia" },
      ],
      400,
      "invalid_request",
      /^image: send the picture as a file part/,
    ],
    [
      "a file part declared as text",
      [
        { name: "image", file: Buffer.from("hello"), filename: "notes.txt", type: "text/plain" },
        { name: "prompt", value: "sepia" },
      ],
      415,
      "unsupported_media_type",
      /^image: the part is declared as text\/plain/,
    ],
    [
      "bytes that are no picture (as base64 would be)",
      [
        { name: "image", file: Buffer.from("definitely not an image"), filename: "photo.jpg", type: "image/jpeg" },
        { name: "prompt", value: "sepia" },
      ],
      400,
      "invalid_request",
      /^image: /,
    ],
    [
      "a JPEG as the mask",
      [{ name: "prompt", value: "remove the object" }],
      400,
      "invalid_request",
      /^mask: must be a PNG \(got jpeg\)/,
    ],
    [
      "a batch field",
      [
        { name: "images", value: "[]" },
        { name: "prompt", value: "sepia" },
      ],
      400,
      "invalid_request",
      /^images: a batch is sent as JSON/,
    ],
    [
      "an unknown field",
      [
        { name: "image", file: Buffer.from("x"), filename: "photo.png", type: "image/png" },
        { name: "promt", value: "sepia" },
      ],
      400,
      "invalid_request",
      /^promt: not a field of this operation/,
    ],
    ["a quality that is no number", [{ name: "quality", value: "high" }], 400, "invalid_request", /quality/],
  ])("%s", async (label, parts, status, code, message) => {
    const before = await balance();
    let sent = parts;
    if (label === "a JPEG as the mask") {
      const jpeg = await productPhoto({ format: "jpeg" });
      sent = [
        { name: "image", file: png, filename: "photo.png", type: "image/png" },
        ...parts,
        { name: "mask", file: jpeg, filename: "mask.png", type: "image/png" },
      ];
    }
    if (label === "a quality that is no number") {
      sent = [
        { name: "image", file: png, filename: "photo.png", type: "image/png" },
        { name: "prompt", value: "sepia" },
        ...parts,
      ];
    }
    const response = await submitParts(sent);
    expect(response.status, response.text).toBe(status);
    expect(response.body).toMatchObject({ code, message: expect.stringMatching(message) });
    expect(await balance()).toBe(before);
  });

  it.each<[string, string, Buffer]>([
    ["without its boundary", "multipart/form-data", curlBody([{ name: "prompt", value: "sepia" }])],
    [
      "cut short (no closing boundary)",
      `multipart/form-data; boundary=${BOUNDARY}`,
      curlBody([
        { name: "prompt", value: "sepia" },
        { name: "image", file: Buffer.alloc(2048, 7), filename: "photo.png", type: "image/png" },
      ]).subarray(0, 400),
    ],
  ])("a body %s is 400 invalid_request, nothing charged", async (_label, contentType, body) => {
    // Cut short inside a file part, the parser errors on the part's stream: unheard, that error would be an
    // uncaught exception (vitest reports it, and it would end a server).
    const before = await balance();
    const response = await request(app.url, "POST", "/api/process", {
      key: account.key,
      headers: { "content-type": contentType },
      rawBody: body,
    });
    expect(response.status, response.text).toBe(400);
    expect(response.body.code).toBe("invalid_request");
    expect(response.body.message).toMatch(/multipart\/form-data/);
    expect(await balance()).toBe(before);
  });

  it("the same picture as base64 in JSON and as a file part is refused with the same code and message", async () => {
    const garbage = Buffer.from("definitely not an image");
    const json = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: { image: base64(garbage), prompt: "sepia" },
    });
    const multipart = await submitParts([
      { name: "image", file: garbage, filename: "photo.jpg", type: "image/jpeg" },
      { name: "prompt", value: "sepia" },
    ]);
    expect(multipart.status).toBe(json.status);
    expect(multipart.body).toEqual(json.body);
  });
});

/**
 * Sends the headers, a multipart preamble opening an `image` file part, then
 * filler, chunked (no Content-Length), until the answer comes or `limit`
 * bytes are out, and never ends the body; resolves with the answer.
 */
function streamFilePart(limit: number): Promise<{ status: number; body: any; sent: number; connection?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}/api/process`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
    });
    let sent = 0;
    let answered = false;
    const filler = Buffer.alloc(32 * 1024, 0xab);
    req.on("response", (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        resolve({
          status: res.statusCode ?? 0,
          body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
          sent,
          connection: res.headers.connection,
        });
        req.destroy();
      });
    });
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    const preamble = Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nsepia\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="huge.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    req.write(preamble);
    sent += preamble.length;
    const pump = () => {
      while (!answered && sent < limit) {
        sent += filler.length;
        if (!req.write(filler)) {
          req.once("drain", pump);
          return;
        }
      }
    };
    pump();
  });
}

describe("multipart/form-data uploads: limits while reading, credentials before the body", () => {
  it("refuses a file part over the image limit with 413 while it streams, the body never finished", async () => {
    const before = await balance();
    // The part outgrows its limit by 128 KiB, then the client stops, its body unfinished (and well under the
    // request's limit): an answer can only come from the part's limit, checked while reading.
    const answer = await streamFilePart(MAX_IMAGE_BYTES + 128 * 1024);
    expect(answer.status).toBe(413);
    expect(answer.body).toEqual({
      code: "payload_too_large",
      message: `image: the file is larger than ${MAX_IMAGE_BYTES} bytes, the largest image accepted.`,
    });
    expect(answer.connection).toBe("close");
    expect(await balance()).toBe(before);
  });

  it("refuses a multipart body over the request limit 413, from its Content-Length, before reading it", async () => {
    const answer = await rawUpload(app.url, {
      path: "/api/process",
      headers: { authorization: `Bearer ${account.key}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
      declared: NINETY_MB,
      send: 0,
    });
    expect(answer.status).toBe(413);
    expect(answer.body.code).toBe("payload_too_large");
  });

  it.each<[string, Record<string, string>]>([
    ["no credentials", {}],
    ["an unknown key", { authorization: `Bearer pk_${"A".repeat(43)}` }],
  ])("answers a 90 MB multipart upload with %s 401 after a few KB of it, and closes the connection", async (_label, auth) => {
    const answer = await rawUpload(app.url, {
      path: "/api/process",
      headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}`, ...auth },
      declared: NINETY_MB,
      send: 8 * 1024,
    });
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe("unauthorized");
    // The client had written only what it sent before the answer came: the body was never waited for.
    expect(answer.sent).toBe(8 * 1024);
    expect(answer.headers.connection).toBe("close");
    // The same upload with the key is read: the 401 was the credentials' doing, not the body's type.
    const withKey = await announceUpload(
      app.url,
      "/api/process",
      { authorization: `Bearer ${account.key}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
      1024 * 1024,
    );
    expect(withKey).toBe("admitted");
  });

  it("still refuses other body types on POST /api/process with 415, naming both it takes", async () => {
    const response = await request(app.url, "POST", "/api/process", {
      key: account.key,
      headers: { "content-type": "text/plain" },
      rawBody: "image=...",
    });
    expect(response.status).toBe(415);
    expect(response.body.message).toMatch(/multipart\/form-data/);
  });
});
