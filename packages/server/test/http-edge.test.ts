import http from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type KeyedAccount, keyedAccount, signUp, uniqueEmail } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { announceUpload, rawUpload } from "../../../test/support/raw-upload";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The host's checks before any adapter, over real HTTP with raw requests
 * (so a test controls exactly how much of a body is sent, and when).
 */

const NINETY_MB = 90 * 1024 * 1024;
const SUBMISSION_LIMIT = 2 * 1024 * 1024;

let app: TestApp;
let account: KeyedAccount;
let photo: string;
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_MAX_REQUEST_BYTES: String(SUBMISSION_LIMIT) }, { role: "api" });
  account = await keyedAccount(app, { plan: "pro" });
  photo = base64(await productPhoto());
});
afterAll(() => app.close());

const balance = async () => (await app.services.profiles.get(account.userId)).credits;
const mcpHeaders = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" };
const editImageCall = (args: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: { name: "edit_image", arguments: args },
});

describe("credentials before the body", () => {
  const routes = [
    { path: "/api/process", headers: {} },
    { path: "/trpc/process.submit", headers: {} },
    { path: "/mcp", headers: mcpHeaders },
  ];
  const credentials: Array<[string, Record<string, string>]> = [
    ["no credentials", {}],
    ["an unknown key", { authorization: `Bearer pk_${"A".repeat(43)}` }],
    ["a session cookie where a key is required", { cookie: "retouch.session_token=forged.signature" }],
  ];

  describe.each(routes)("POST $path", ({ path, headers }) => {
    it.each(credentials)("answers a 90 MB upload with %s 401 after a few KB, and closes the connection", async (_label, auth) => {
      const answer = await rawUpload(app.url, { path, headers: { ...headers, ...auth }, declared: NINETY_MB, send: 8 * 1024 });
      expect(answer.status).toBe(401);
      expect(answer.sent).toBe(8 * 1024);
      expect(answer.headers.connection).toBe("close");
      expect(answer.body.code ?? answer.body.error.data.code).toBe("unauthorized");
    });
  });

  it("never asks an unauthenticated `Expect: 100-continue` upload for its body", async () => {
    const answer = await rawUpload(app.url, {
      path: "/api/process",
      headers: { expect: "100-continue" },
      declared: NINETY_MB,
      send: 0,
    });
    expect(answer.status).toBe(401);
    expect(answer.continued).toBe(false);
  });

  it("answers an authenticated upload over the limit 413 from Content-Length, before its body", async () => {
    for (const path of ["/api/process", "/trpc/process.submit", "/mcp"]) {
      const answer = await rawUpload(app.url, {
        path,
        headers: { authorization: `Bearer ${account.key}`, ...(path === "/mcp" ? mcpHeaders : {}) },
        declared: NINETY_MB,
        send: 0,
      });
      expect(answer.status, path).toBe(413);
      expect(answer.headers.connection).toBe("close");
    }
  });
});

describe("one key lookup per request", () => {
  it("reuses the principal the edge resolved, on REST, /trpc and /mcp", async () => {
    const apiKeys = app.services.apiKeys;
    const original = apiKeys.authenticate;
    let lookups = 0;
    apiKeys.authenticate = (key: string) => {
      lookups++;
      return original.call(apiKeys, key);
    };
    try {
      const requests = [
        () => request(app.url, "GET", "/api/keys", { key: account.key }),
        () =>
          request(app.url, "GET", `/trpc/process.status?input=${encodeURIComponent('{"job_id":"job_x"}')}`, { key: account.key }),
        () =>
          request(app.url, "POST", "/mcp", {
            key: account.key,
            headers: mcpHeaders,
            body: {
              jsonrpc: "2.0",
              id: 1,
              method: "tools/call",
              params: { name: "get_job_status", arguments: { job_id: "job_x" } },
            },
          }),
      ];
      for (const send of requests) {
        lookups = 0;
        const response = await send();
        expect(response.status).toBeLessThan(500);
        expect(lookups).toBe(1);
      }
    } finally {
      apiKeys.authenticate = original;
    }
  });
});

describe("a chunked body over the limit", () => {
  const auth = () => ({ authorization: `Bearer ${account.key}` });

  it("is 413 on REST as soon as it passes the limit, in the error shape", async () => {
    // The body never ends: an answer at all means the server refused it part-way.
    const answer = await rawUpload(app.url, { path: "/api/process", headers: auth(), send: 16 * SUBMISSION_LIMIT });
    expect(answer.status).toBe(413);
    expect(answer.body).toEqual({ code: "payload_too_large", message: expect.stringContaining(String(SUBMISSION_LIMIT)) });
    expect(answer.sent).toBeLessThan(16 * SUBMISSION_LIMIT);
  });

  it("is 413 on /trpc, in tRPC's envelope", async () => {
    const answer = await rawUpload(app.url, { path: "/trpc/process.submit", headers: auth(), send: 4 * SUBMISSION_LIMIT });
    expect(answer.status).toBe(413);
    expect(answer.body.error.data).toMatchObject({ code: "payload_too_large", httpStatus: 413 });
  });

  it("is 413 on /mcp, as a JSON-RPC error", async () => {
    const answer = await rawUpload(app.url, {
      path: "/mcp",
      headers: { ...auth(), ...mcpHeaders },
      send: 4 * SUBMISSION_LIMIT,
    });
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ jsonrpc: "2.0", error: { code: -32600, data: { code: "payload_too_large" } }, id: null });
  });

  it("is 413 past 1 MiB on an operation that carries no images", async () => {
    const answer = await rawUpload(app.url, { path: "/api/keys", headers: auth(), send: SUBMISSION_LIMIT });
    expect(answer.status).toBe(413);
  });
});

describe("JSON nested too deep", () => {
  const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const post = (path: string, rawBody: string, headers: Record<string, string> = {}) =>
    request(app.url, "POST", path, { key: account.key, rawBody, headers: { "content-type": "application/json", ...headers } });

  it("is 400 on REST, /trpc and /mcp at 100,000 levels, and charges nothing", async () => {
    const before = await balance();
    const rest = await post("/api/process", `{"image":"${photo}","prompt":"make it sepia","extra":${deep(100_000)}}`);
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({ code: "invalid_request", message: "The JSON body is nested deeper than 32 levels." });
    const trpc = await post("/trpc/process.submit", `{"image":"${photo}","prompt":"make it sepia","extra":${deep(100_000)}}`);
    expect(trpc.status).toBe(400);
    expect(trpc.body.error.data.code).toBe("invalid_request");
    const mcpBody = JSON.stringify(editImageCall({ image: photo, prompt: "make it sepia" })).replace(
      '"prompt"',
      `"extra":${deep(100_000)},"prompt"`,
    );
    const mcp = await post("/mcp", mcpBody, mcpHeaders);
    expect(mcp.status).toBe(400);
    expect(mcp.body).toMatchObject({ error: { code: -32600, message: expect.stringMatching(/nested deeper/) } });
    expect(await balance()).toBe(before);
  });

  it("accepts 32 levels and refuses 33", async () => {
    const wrap = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
    const ok = await post("/api/keys", `{"name":"depth","x":${wrap(31)}}`);
    expect(ok.status, ok.text).toBe(201);
    const refused = await post("/api/keys", `{"name":"depth","x":${wrap(32)}}`);
    expect(refused.status).toBe(400);
  });
});

describe("text PostgreSQL cannot store", () => {
  it("refuses NUL in a prompt on REST, /trpc and /mcp with 400 naming the field; nothing charged", async () => {
    const before = await balance();
    const body = { image: photo, prompt: "make it\u0000 sepia" };
    const rest = await request(app.url, "POST", "/api/process", { key: account.key, body });
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({
      code: "invalid_request",
      message: expect.stringMatching(/^prompt: contains a NUL character/),
      issues: [{ path: "prompt", message: expect.any(String) }],
    });
    const trpc = await request(app.url, "POST", "/trpc/process.submit", { key: account.key, body });
    expect(trpc.status).toBe(400);
    expect(trpc.body.error.message).toMatch(/^prompt: contains a NUL/);
    const mcp = await request(app.url, "POST", "/mcp", { key: account.key, body: editImageCall(body), headers: mcpHeaders });
    expect(mcp.status).toBe(400);
    expect(mcp.body.error.message).toMatch(/^params\.arguments\.prompt: contains a NUL/);
    const batch = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: { images: [{ image: photo, prompt: "make it sepia" }, body] },
    });
    expect(batch.status).toBe(400);
    expect(batch.body.message).toMatch(/^images\.1\.prompt: contains a NUL/);
    expect(await balance()).toBe(before);
    expect(await app.services.stores.jobs.countPending(account.userId)).toBe(0);
  });

  it("refuses an unpaired surrogate, which would be silently replaced on the way into the database", async () => {
    const before = await balance();
    // JSON.stringify writes a lone surrogate as the escape \ud800, as a client would send it.
    const response = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: { image: photo, prompt: "make it \ud800 sepia" },
    });
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/^prompt: contains an unpaired surrogate/);
    expect(await balance()).toBe(before);
  });

  it("refuses NUL in a key name, and creates no key", async () => {
    const keyCount = async () => (await request(app.url, "GET", "/api/keys", { key: account.key })).body.keys.length;
    const before = await keyCount();
    const response = await request(app.url, "POST", "/api/keys", { key: account.key, body: { name: "ci\u0000key" } });
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/^name: contains a NUL/);
    expect(await keyCount()).toBe(before);
  });

  it("refuses NUL in a sign-up name, and creates no account", async () => {
    const email = uniqueEmail("nul");
    const response = await request(app.url, "POST", "/auth/sign-up/email", {
      body: { email, password: "correct horse battery", name: "Ada\u0000" },
    });
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/^name: contains a NUL/);
    expect(await app.services.stores.users.findByEmail(email)).toBeUndefined();
    // The same request without the NUL works: the refusal left nothing behind.
    await signUp(app.url, { email, name: "Ada" });
  });

  it("refuses NUL in a field name and in query-string text", async () => {
    const key = await request(app.url, "POST", "/api/keys", { key: account.key, body: { name: "x", "a\u0000": 1 } });
    expect(key.status).toBe(400);
    expect(key.body.message).toMatch(/field name contains a NUL/);
    const status = await request(app.url, "GET", "/api/process/status?job_id=job_%00", { key: account.key });
    expect(status.status).toBe(400);
    expect(status.body.message).toMatch(/^job_id: contains a NUL/);
    const input = encodeURIComponent(JSON.stringify({ job_id: "job_\u0000" }));
    const trpc = await request(app.url, "GET", `/trpc/process.status?input=${input}`, { key: account.key });
    expect(trpc.status).toBe(400);
    expect(trpc.body.error.message).toMatch(/^job_id: contains a NUL/);
  });
});

describe("the byte budget across bodies in flight", () => {
  const LIMIT = 1024 * 1024;
  let small: TestApp;
  let owner: KeyedAccount;
  beforeAll(async () => {
    small = await startTestApp(
      { RETOUCH_MAX_REQUEST_BYTES: String(LIMIT), RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: String(1.5 * LIMIT) },
      { role: "api" },
    );
    owner = await keyedAccount(small, { plan: "pro" });
  });
  afterAll(() => small.close());

  /** A real submission padded with JSON whitespace to `size` bytes. */
  const paddedSubmission = (size: number) => {
    const json = JSON.stringify({ image: photo, prompt: "make it sepia" });
    return Buffer.from(json + " ".repeat(size - Buffer.byteLength(json)));
  };

  /** Announces `size` bytes with `Expect: 100-continue`; resolves once the server has agreed to read them. */
  function admittedUpload(size: number) {
    const req = http.request(`${small.url}/api/process`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${owner.key}`,
        "content-type": "application/json",
        "content-length": String(size),
        expect: "100-continue",
      },
    });
    const answer = new Promise<number>((resolve, reject) => {
      req.on("response", (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
    });
    const admitted = new Promise<void>((resolve) => req.once("continue", () => resolve()));
    req.flushHeaders();
    return {
      admitted,
      answer,
      /** Writes part of the body; resolves once it has left for the server. */
      send: (part: Buffer) => new Promise<void>((resolve) => req.write(part, () => resolve())),
      finish: (body: Buffer) => req.end(body),
    };
  }

  it("counts bytes as they arrive: an announced length takes no room, received bytes do", async () => {
    const size = 1_000_000;
    const first = admittedUpload(size);
    await first.admitted;
    // Announced and admitted, nothing sent: the room is untouched, a second announcement of the same size fits.
    expect(await announceUpload(small.url, "/api/process", { authorization: `Bearer ${owner.key}` }, size)).toBe("admitted");

    // Once all but the last byte of the first body has arrived, another 1,000,000 bytes cannot fit (1.5 MiB in all):
    // refused before it is sent. Asked again until the server has read what the first one sent.
    const body = paddedSubmission(size);
    await first.send(body.subarray(0, size - 1));
    const refused = await vi.waitFor(
      async () => {
        const answer = await announceUpload(small.url, "/api/process", { authorization: `Bearer ${owner.key}` }, size);
        if (answer === "admitted") throw new Error("the first body's bytes never took room");
        return answer;
      },
      { timeout: 5_000, interval: 20 },
    );
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ code: "service_unavailable", message: expect.stringMatching(/Retry-After/) });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);

    // A chunked body is counted as it arrives: refused when it outgrows the room (503), before it reaches
    // the size limit (which would be a 413) and long before its end (it never ends).
    const chunked = await rawUpload(small.url, {
      path: "/api/process",
      headers: { authorization: `Bearer ${owner.key}` },
      send: 16 * LIMIT,
    });
    expect(chunked.status).toBe(503);

    // A small request still fits.
    const listed = await request(small.url, "GET", "/api/keys", { key: owner.key });
    expect(listed.status).toBe(200);
    const created = await request(small.url, "POST", "/api/keys", { key: owner.key, body: { name: "while busy" } });
    expect(created.status).toBe(201);

    // The first upload completes normally; once read, its share is free again.
    first.finish(body.subarray(size - 1));
    expect(await first.answer).toBe(200);
    const next = admittedUpload(size);
    await next.admitted;
    next.finish(paddedSubmission(size));
    expect(await next.answer).toBe(200);
  });
});
