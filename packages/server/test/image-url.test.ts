import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, rectangleMask } from "../../../test/support/images";
import { jobCount } from "../../../test/support/jobs";
import { connectMcp } from "../../../test/support/mcp-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * `image_url` and `mask_url` over real HTTP: the service fetches from a real
 * server on loopback. `dev` runs with the development flag (which allows
 * http: and loopback, as for webhooks) and processes jobs; `strict` has the
 * production rules, where loopback is refused before any connection.
 */
const MAX_IMAGE_BYTES = 1024 * 1024;
let dev: TestApp;
let strict: TestApp;
let photo: Buffer;
let mask: Buffer;

/** The image host: what it serves, and what it saw. */
const host = {
  url: "",
  server: undefined as Server | undefined,
  /** `/flaky.jpg`: "down" answers 503, "hang" never answers, "up" serves the photo. */
  flaky: "up" as "up" | "down" | "hang",
  requests: [] as Array<{ path: string; userAgent: string | undefined }>,
  connections: 0,
  hits(path: string) {
    return this.requests.filter((entry) => entry.path === path).length;
  },
};

beforeAll(async () => {
  photo = await readFile(new URL("../../engine/test/fixtures/coffee.jpg", import.meta.url));
  mask = await rectangleMask(600, 400, { left: 250, top: 150, width: 100, height: 80 });
  const tooLarge = Buffer.concat([await sharp(photo).png().toBuffer(), Buffer.alloc(MAX_IMAGE_BYTES)]);
  host.server = createServer((req, res) => {
    const path = req.url ?? "/";
    host.requests.push({ path, userAgent: req.headers["user-agent"] });
    // The Content-Type is wrong on purpose: the service sniffs the bytes.
    if (path === "/photo.jpg") res.writeHead(200, { "Content-Type": "text/plain" }).end(photo);
    else if (path === "/mask.png") res.writeHead(200, { "Content-Type": "image/png" }).end(mask);
    else if (path === "/moved.jpg") res.writeHead(302, { Location: "/photo.jpg" }).end();
    else if (path === "/loop") res.writeHead(302, { Location: "/loop" }).end();
    else if (path === "/page.jpg") res.writeHead(200, { "Content-Type": "image/jpeg" }).end("<html><body>Sign in</body></html>");
    else if (path === "/large.png") res.writeHead(200, { "Content-Length": tooLarge.length }).end(tooLarge);
    else if (path === "/large-chunked.png") {
      res.writeHead(200, { "Content-Type": "image/png" });
      for (let offset = 0; offset < tooLarge.length; offset += 64 * 1024)
        res.write(tooLarge.subarray(offset, offset + 64 * 1024));
      res.end();
    } else if (path.startsWith("/flaky.jpg")) {
      if (host.flaky === "up") res.writeHead(200).end(photo);
      else if (host.flaky === "down") res.writeHead(503).end("maintenance");
      // "hang": no answer at all; the service's timeout must fire.
    } else res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  });
  host.server.on("connection", () => host.connections++);
  await new Promise<void>((resolve) => host.server?.listen(0, "127.0.0.1", resolve));
  host.url = `http://127.0.0.1:${(host.server.address() as AddressInfo).port}`;
  [dev, strict] = await Promise.all([
    startTestApp({
      RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
      RETOUCH_IMAGE_FETCH_TIMEOUT: "1s",
      RETOUCH_MAX_IMAGE_BYTES: String(MAX_IMAGE_BYTES),
      RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
    }),
    startTestApp({}, { role: "api" }),
  ]);
}, 120_000);
afterAll(async () => {
  host.server?.closeAllConnections();
  await new Promise<void>((resolve) => host.server?.close(() => resolve()));
  await Promise.all([dev?.close(), strict?.close()]);
});

const submit = (app: TestApp, account: KeyedAccount, body: unknown, headers: Record<string, string> = {}) =>
  request(app.url, "POST", "/api/process", { key: account.key, body, headers });

async function expectNothingChanged(app: TestApp, account: KeyedAccount, credits = 10) {
  expect((await app.services.profiles.get(account.userId)).credits).toBe(credits);
  expect(await jobCount(app.config.databaseUrl as string, account.userId)).toBe(0);
}

async function download(app: TestApp, key: string, jobId: string): Promise<Buffer> {
  const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key });
  const link = new URL(result.body.url);
  return Buffer.from(await (await fetch(`${app.url}${link.pathname}${link.search}`)).arrayBuffer());
}

describe("with the development flag (http: and loopback allowed)", () => {
  it("fetches image_url at submission, sniffing the bytes rather than the Content-Type, and edits it", async () => {
    const account = await keyedAccount(dev);
    const before = host.hits("/photo.jpg");
    const response = await submit(dev, account, { image_url: `${host.url}/photo.jpg`, prompt: "make it black and white" });
    expect(response.status, response.text).toBe(200);
    expect(response.body.credits_remaining).toBe(9);
    expect(host.hits("/photo.jpg")).toBe(before + 1);
    expect(host.requests.at(-1)?.userAgent).toBe("Retouch-ImageFetch/1.0");
    expect(await waitForJob(dev.url, account.key, response.body.job_id)).toMatchObject({
      status: "done",
      width: 600,
      height: 400,
    });
    const stats = await sharp(await download(dev, account.key, response.body.job_id)).stats();
    const means = stats.channels.slice(0, 3).map((channel) => channel.mean);
    expect(Math.max(...means) - Math.min(...means)).toBeLessThan(1);
  });

  it("takes mask_url for the mask, and follows a redirect", async () => {
    const account = await keyedAccount(dev);
    const response = await submit(dev, account, {
      image_url: `${host.url}/moved.jpg`,
      mask_url: `${host.url}/mask.png`,
      prompt: "remove the object",
      format: "png",
    });
    expect(response.status, response.text).toBe(200);
    expect(await waitForJob(dev.url, account.key, response.body.job_id)).toMatchObject({
      status: "done",
      format: "png",
      width: 600,
    });
  });

  it.each([
    ["answers 5xx", "down"],
    ["does not answer in time", "hang"],
  ] as const)(
    "a host that %s: 502 image_fetch_failed, nothing charged or kept; the same key succeeds once it recovers",
    async (_label, failure) => {
      const account = await keyedAccount(dev, { plan: "pro" });
      const body = { image_url: `${host.url}/flaky.jpg?case=${failure}`, prompt: "make it sepia" };
      const headers = { "Idempotency-Key": `flaky-${failure}` };
      host.flaky = failure;
      try {
        const failed = await submit(dev, account, body, headers);
        expect(failed.status, failed.text).toBe(502);
        expect(failed.body.code).toBe("image_fetch_failed");
        expect(failed.body.message).toMatch(
          failure === "down"
            ? /^image_url: 127\.0\.0\.1:\d+ could not serve the image \(the host answered 503/
            : /within 1000 ms/,
        );
        expect(failed.body.message).toMatch(/nothing was charged/);
        await expectNothingChanged(dev, account);
      } finally {
        host.flaky = "up";
      }
      const retried = await submit(dev, account, body, headers);
      expect(retried.status, retried.text).toBe(200);
      expect(retried.body.credits_remaining).toBe(9);
      // A second retry is answered from the stored response: no new download, no new charge.
      const fetches = host.hits(`/flaky.jpg?case=${failure}`);
      const replay = await submit(dev, account, body, headers);
      expect(replay.body).toEqual(retried.body);
      expect(host.hits(`/flaky.jpg?case=${failure}`)).toBe(fetches);
      expect((await dev.services.profiles.get(account.userId)).credits).toBe(9);
    },
  );

  it("an unreachable host: 502 image_fetch_failed, nothing charged", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const account = await keyedAccount(dev);
    const response = await submit(dev, account, { image_url: `http://127.0.0.1:${port}/x.jpg`, prompt: "make it sepia" });
    expect(response.status, response.text).toBe(502);
    expect(response.body).toMatchObject({ code: "image_fetch_failed", message: expect.stringMatching(/could not be reached/) });
    await expectNothingChanged(dev, account);
  });

  const refusals: Array<[string, () => Record<string, unknown>, number, RegExp]> = [
    ["a 404", () => ({ image_url: `${host.url}/missing.jpg` }), 400, /^image_url: 127\.0\.0\.1:\d+: the host answered 404/],
    [
      "a page that is not an image, whatever its Content-Type says",
      () => ({ image_url: `${host.url}/page.jpg` }),
      400,
      /^image_url: 127\.0\.0\.1:\d+ did not answer with a JPEG, PNG or WebP image/,
    ],
    [
      "an image over the size cap (Content-Length)",
      () => ({ image_url: `${host.url}/large.png` }),
      413,
      /^image_url: the image is larger than 1048576 bytes/,
    ],
    [
      "an image over the size cap (chunked)",
      () => ({ image_url: `${host.url}/large-chunked.png` }),
      413,
      /^image_url: the image is larger than 1048576 bytes/,
    ],
    ["a redirect loop", () => ({ image_url: `${host.url}/loop` }), 400, /^image_url: 127\.0\.0\.1:\d+: more than 3 redirects/],
    ["a scheme other than http(s)", () => ({ image_url: "ftp://127.0.0.1/photo.jpg" }), 400, /^image_url: must use https:/],
    [
      "a mask_url that is not a PNG",
      () => ({ image_url: `${host.url}/photo.jpg`, mask_url: `${host.url}/photo.jpg` }),
      400,
      /^mask_url: must be a PNG/,
    ],
    [
      "both image and image_url",
      () => ({ image: base64(photo), image_url: `${host.url}/photo.jpg` }),
      400,
      /image and image_url: send one of them/,
    ],
    [
      "both mask and mask_url",
      () => ({ image_url: `${host.url}/photo.jpg`, mask: base64(mask), mask_url: `${host.url}/mask.png` }),
      400,
      /mask and mask_url: send one of them/,
    ],
    ["neither image nor image_url", () => ({}), 400, /image: is required: send image \(base64\) or image_url/],
  ];
  it.each(refusals)("refuses %s (%i), nothing charged, no job", async (_label, fields, status, message) => {
    const account = await keyedAccount(dev);
    const response = await submit(dev, account, { prompt: "make it sepia", ...fields() });
    expect(response.status, response.text).toBe(status);
    expect(response.body.code).toBe(status === 413 ? "payload_too_large" : "invalid_request");
    expect(response.body.message).toMatch(message);
    await expectNothingChanged(dev, account);
  });

  it("in a batch: the client's mistakes are item errors, a host failing sinks the request (502) until it recovers", async () => {
    const account = await keyedAccount(dev, { plan: "starter" });
    const listed = await submit(dev, account, {
      images: [
        { image_url: `${host.url}/photo.jpg`, prompt: "make it sepia" },
        { image_url: `${host.url}/missing.jpg`, prompt: "make it sepia" },
        { image: base64(photo), image_url: `${host.url}/photo.jpg`, prompt: "make it sepia" },
      ],
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.jobs.map((job: { status: string }) => job.status)).toEqual(["pending", "error", "error"]);
    expect(listed.body.jobs[1].error).toMatch(/404/);
    expect(listed.body.jobs[2].error).toMatch(/send one of them/);
    expect(listed.body.credits_remaining).toBe(9);

    const other = await keyedAccount(dev, { plan: "starter" });
    const body = {
      images: [
        { image_url: `${host.url}/photo.jpg`, prompt: "make it sepia" },
        { image_url: `${host.url}/flaky.jpg?case=batch`, prompt: "make it sepia" },
      ],
    };
    const headers = { "Idempotency-Key": "batch-with-a-flaky-host" };
    host.flaky = "down";
    try {
      const failed = await submit(dev, other, body, headers);
      expect(failed.status, failed.text).toBe(502);
      expect(failed.body.code).toBe("image_fetch_failed");
      expect(failed.body.message).toMatch(/^image_url: /);
      await expectNothingChanged(dev, other);
    } finally {
      host.flaky = "up";
    }
    const retried = await submit(dev, other, body, headers);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.jobs.map((job: { status: string }) => job.status)).toEqual(["pending", "pending"]);
    expect(retried.body.credits_remaining).toBe(8);
  });

  it("the Idempotency-Key covers the URL: the same key with another URL is 422", async () => {
    const account = await keyedAccount(dev);
    const headers = { "Idempotency-Key": "url-covered" };
    expect((await submit(dev, account, { image_url: `${host.url}/photo.jpg`, prompt: "make it sepia" }, headers)).status).toBe(
      200,
    );
    const other = await submit(dev, account, { image_url: `${host.url}/moved.jpg`, prompt: "make it sepia" }, headers);
    expect(other.status).toBe(422);
    expect(other.body.code).toBe("idempotency_key_reused");
  });

  it("MCP edit_image takes image_url (official client, tools listed first)", async () => {
    const account = await keyedAccount(dev);
    const client = await connectMcp(dev.url, account.key, "image-url-test");
    try {
      const { tools } = await client.listTools();
      const edit = tools.find((tool) => tool.name === "edit_image");
      expect(Object.keys(edit?.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["image_url", "mask_url"]));
      type ToolResult = { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ text?: string }> };
      const started = (await client.callTool({
        name: "edit_image",
        arguments: { image_url: `${host.url}/photo.jpg`, prompt: "make it black and white" },
      })) as ToolResult;
      expect(started.isError, started.content[0]?.text).toBeFalsy();
      expect(started.structuredContent).toEqual({ job_id: expect.stringMatching(/^job_/), credits_remaining: 9 });
      const refused = (await client.callTool({
        name: "edit_image",
        arguments: { image_url: `${host.url}/missing.jpg`, prompt: "make it black and white" },
      })) as ToolResult;
      expect(refused.isError).toBe(true);
      expect(JSON.parse(refused.content[0]?.text ?? "{}")).toMatchObject({ code: "invalid_request" });
    } finally {
      await client.close();
    }
  });
});

describe("without the development flag (production rules)", () => {
  const port = () => new URL(host.url).port;
  const refused: Array<[string, () => string, RegExp]> = [
    ["loopback over https", () => `https://127.0.0.1:${port()}/photo.jpg`, /must point to a public address/],
    ["loopback over http", () => `http://127.0.0.1:${port()}/photo.jpg`, /must use https:/],
    ["a name that resolves to loopback", () => `https://localhost:${port()}/photo.jpg`, /must point to a public address/],
    ["IPv6 loopback", () => `https://[::1]:${port()}/photo.jpg`, /must point to a public address/],
    ["the cloud metadata address", () => "https://169.254.169.254/latest/meta-data", /must point to a public address/],
    ["a private network", () => "https://10.0.0.8/photo.jpg", /must point to a public address/],
  ];
  it.each(refused)("refuses %s with 400, without connecting", async (_label, url, message) => {
    const account = await keyedAccount(strict);
    const connections = host.connections;
    const requests = host.requests.length;
    for (const field of ["image_url", "mask_url"] as const) {
      const body =
        field === "image_url"
          ? { image_url: url(), prompt: "make it sepia" }
          : { image: base64(photo), mask_url: url(), prompt: "remove the object" };
      const response = await submit(strict, account, body);
      expect(response.status, response.text).toBe(400);
      expect(response.body.code).toBe("invalid_request");
      expect(response.body.message).toMatch(new RegExp(`^${field}: `));
      expect(response.body.message).toMatch(message);
    }
    expect(host.connections).toBe(connections);
    expect(host.requests.length).toBe(requests);
    await expectNothingChanged(strict, account);
  });
});
