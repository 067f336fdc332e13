import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { announceUpload, type RawAnswer, rawUpload } from "../../../test/support/raw-upload";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { VERIFY_EMAIL_PATH } from "../src/pages/verify-email.page";

/**
 * The attacks of issue 22 against the edge, replayed over real HTTP (raw
 * sockets where a test must control bytes and timing) against a running
 * service: bodies announced and never sent, huge bodies on the OAuth
 * endpoints better-auth would read whole, text and nesting that used to be a
 * 500, MCP calls that wait, bodies on routes that take none.
 */

const MIB = 1024 * 1024;
const IDLE_TIMEOUT_MS = 4_000;
const FORM = "application/x-www-form-urlencoded";
const mcpHeaders = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" };

let app: TestApp;
let customer: KeyedAccount;
let agent: KeyedAccount;
let photo: string;
beforeAll(async () => {
  app = await startTestApp(
    {
      RETOUCH_MAX_REQUEST_BYTES: String(2 * MIB),
      // Authenticated bodies: two full-size submissions at once. Public routes keep their own default 16 MiB.
      RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: String(4 * MIB),
      RETOUCH_BODY_IDLE_TIMEOUT: `${IDLE_TIMEOUT_MS}ms`,
      // So that a test can speak for several clients (X-Forwarded-For) from one loopback address.
      RETOUCH_TRUST_PROXY: "1",
    },
    { role: "api" },
  );
  customer = await keyedAccount(app, { plan: "pro" });
  agent = await keyedAccount(app, { plan: "pro" });
  photo = base64(await productPhoto());
});
afterAll(() => app.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A real submission padded with JSON whitespace to `size` bytes. */
function paddedJson(value: unknown, size: number): Buffer {
  const json = JSON.stringify(value);
  return Buffer.from(json + " ".repeat(Math.max(0, size - Buffer.byteLength(json))));
}

const submit = (key: string, size: number, address: string) =>
  request(app.url, "POST", "/api/process", {
    key,
    rawBody: paddedJson({ image: photo, prompt: "make it sepia" }, size),
    headers: { "content-type": "application/json", "x-forwarded-for": address },
  });

/** Parses the one HTTP response a raw socket received. */
function parseRaw(text: string): { status: number; headers: string; body: any } {
  const [head = "", body = ""] = text.split("\r\n\r\n");
  return { status: Number(head.split(" ")[1]), headers: head.toLowerCase(), body: body ? JSON.parse(body) : undefined };
}

/** A raw socket that sends a request's headers, announcing `length` bytes of body, and then nothing. */
function idleAnnouncer(path: string, length: number): { sent: Promise<void>; closed: Promise<string> } {
  const url = new URL(app.url);
  const socket = net.connect(Number(url.port), url.hostname);
  let received = "";
  socket.setEncoding("utf8");
  socket.on("data", (text: string) => {
    received += text;
  });
  socket.on("error", () => {});
  const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(received)));
  const head = `POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  const sent = new Promise<void>((resolve) => socket.write(head, () => resolve()));
  return { sent, closed };
}

/** An upload whose body the test sends piece by piece. */
function partialUpload(headers: Record<string, string>, declared: number) {
  const req = http.request(`${app.url}/api/process`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": String(declared), ...headers },
  });
  const answer = new Promise<number>((resolve, reject) => {
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
  });
  answer.catch(() => {});
  return {
    answer,
    /** Resolves once the piece has left for the server. */
    send: (piece: Buffer) => new Promise<void>((resolve) => req.write(piece, () => resolve())),
    finish: (piece: Buffer) => req.end(piece),
    abandon: () => req.destroy(),
  };
}

describe("bodies announced and never sent", () => {
  it("300 idle public requests announcing 1 MiB each take no room: a customer's submission is accepted, and each is answered 408", async () => {
    const announcers = Array.from({ length: 300 }, () => idleAnnouncer("/auth/sign-up/email", MIB));
    await Promise.all(announcers.map((announcer) => announcer.sent));
    // Let the server take them all in (what it does with a body it is waiting for). A wait left as it is: nothing
    // outside the server's sources says it has read 300 sets of headers, and the submission below proves nothing before.
    await sleep(500);

    const submission = await submit(customer.key, 1.5 * MIB, "198.51.100.1");
    expect(submission.status, submission.text).toBe(200);

    // No byte for the idle timeout: 408 in the error shape, and the connection closed (the socket's close resolves).
    const answers = (await Promise.all(announcers.map((announcer) => announcer.closed))).map(parseRaw);
    for (const answer of answers) {
      expect(answer.status).toBe(408);
      expect(answer.headers).toContain("connection: close");
      expect(answer.body).toEqual({ code: "request_timeout", message: expect.stringMatching(/No byte of the request body/) });
    }
  }, 30_000);

  it("an authenticated upload that stalls half-way is answered 408 and gives its room back", async () => {
    const stalled = partialUpload({ authorization: `Bearer ${customer.key}`, "x-forwarded-for": "198.51.100.2" }, 2 * MIB);
    await stalled.send(Buffer.alloc(MIB, " "));
    expect(await stalled.answer).toBe(408);
    // Its address can send a full-size submission again.
    const submission = await submit(customer.key, 2 * MIB - 1024, "198.51.100.2");
    expect(submission.status, submission.text).toBe(200);
  }, 30_000);
});

describe("the allowance per address", () => {
  it("one address cannot hold more than its share; another address can", async () => {
    // 2 MiB per address by default here (RETOUCH_MAX_REQUEST_BYTES; half the 4 MiB would be less).
    const size = 2 * MIB - 1024;
    const first = partialUpload({ authorization: `Bearer ${customer.key}`, "x-forwarded-for": "203.0.113.1" }, size);
    const body = paddedJson({ image: photo, prompt: "make it sepia" }, size);
    await first.send(body.subarray(0, size - 1));

    // Asked again until the server has read what the first one sent (well within the idle timeout).
    const refused = await vi.waitFor(
      async () => {
        const answer = await announceUpload(
          app.url,
          "/api/process",
          { authorization: `Bearer ${customer.key}`, "x-forwarded-for": "203.0.113.1" },
          MIB,
        );
        if (answer === "admitted") throw new Error("the first body's bytes never took room");
        return answer;
      },
      { timeout: 2_000, interval: 20 },
    );
    expect(refused.status).toBe(503);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(refused.body.code).toBe("service_unavailable");

    // The same announcement from another address fits in the room left.
    expect(
      await announceUpload(
        app.url,
        "/api/process",
        { authorization: `Bearer ${customer.key}`, "x-forwarded-for": "203.0.113.2" },
        MIB,
      ),
    ).toBe("admitted");
    first.finish(body.subarray(size - 1));
    expect(await first.answer).toBe(200);
  }, 30_000);
});

describe("OAuth endpoints read small bodies only", () => {
  const routes = [
    { path: "/auth/oauth2/authorize", type: FORM },
    { path: "/auth/oauth2/token", type: FORM },
    { path: "/auth/oauth2/register", type: "application/json" },
    { path: "/auth/oauth2/revoke", type: FORM },
    { path: "/auth/oauth2/consent", type: "application/json" },
  ];
  const NINETY_FIVE_MB = 95_000_000;
  const expectTooLarge = (answer: RawAnswer) => {
    expect(answer.status).toBe(413);
    expect(answer.sent).toBeLessThan(10 * MIB);
    expect(answer.headers.connection).toBe("close");
    expect(answer.body).toEqual({
      code: "payload_too_large",
      message: expect.stringMatching(/larger than \d+ bytes/),
      error: "payload_too_large",
      error_description: expect.stringMatching(/larger than \d+ bytes/),
    });
  };

  describe.each(routes)("POST $path", ({ path, type }) => {
    it("answers a 95 MB Content-Length 413 before reading it", async () => {
      const answer = await rawUpload(app.url, {
        path,
        headers: { "content-type": type },
        declared: NINETY_FIVE_MB,
        send: NINETY_FIVE_MB,
      });
      expectTooLarge(answer);
    }, 20_000);

    it("answers a 95 MB chunked body 413 as soon as it passes the route's limit", async () => {
      const answer = await rawUpload(app.url, { path, headers: { "content-type": type }, send: NINETY_FIVE_MB });
      expectTooLarge(answer);
    }, 20_000);
  });
});

describe("text and nesting that used to be a 500 on OAuth", () => {
  const refusedAs400 = (response: { status: number; body: any }, message: RegExp) => {
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(message),
      error: "invalid_request",
      error_description: expect.stringMatching(message),
    });
  };

  it("NUL in a registration's JSON is 400 naming the field", async () => {
    const response = await request(app.url, "POST", "/auth/oauth2/register", {
      body: { redirect_uris: ["http://localhost:8123/callback"], client_name: "Agent\u0000" },
    });
    refusedAs400(response, /^client_name: contains a NUL/);
  });

  it("NUL in a token request's form is 400 naming the field", async () => {
    const response = await request(app.url, "POST", "/auth/oauth2/token", {
      rawBody: "grant_type=authorization_code&code=abc%00def&client_id=someone&code_verifier=x",
      headers: { "content-type": FORM },
    });
    refusedAs400(response, /^code: contains a NUL/);
  });

  it("GET /auth/oauth2/authorize?client_id=%00 without credentials is 400", async () => {
    const response = await request(app.url, "GET", "/auth/oauth2/authorize?client_id=%00&response_type=code");
    refusedAs400(response, /^client_id: contains a NUL/);
  });

  it("100,000-deep JSON on registration is 400, refused at its 33rd level as it arrives", async () => {
    const deep = (depth: number) =>
      `{"redirect_uris":["http://localhost:8123/callback"],"x":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    // Chunked: no length to judge it by, so it is read, and refused at the 33rd bracket.
    const body = new TextEncoder().encode(deep(100_000));
    const chunked = await fetch(`${app.url}/auth/oauth2/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(body);
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    refusedAs400({ status: chunked.status, body: await chunked.json() }, /nested deeper than 32 levels/);
    // Within the registration limit with a Content-Length: the same 400.
    const announced = await request(app.url, "POST", "/auth/oauth2/register", {
      rawBody: deep(10_000),
      headers: { "content-type": "application/json" },
    });
    refusedAs400(announced, /nested deeper than 32 levels/);
    // Its 200 KB announced: too large for a registration (64 KiB), refused before it is read.
    const large = await request(app.url, "POST", "/auth/oauth2/register", {
      rawBody: deep(100_000),
      headers: { "content-type": "application/json" },
    });
    expect(large.status).toBe(413);
  });
});

describe("MCP calls waiting on wait_seconds", () => {
  it("hold none of the allowance: another customer's upload is accepted while 8 of them wait", async () => {
    const CALLS = 8;
    const before = await app.services.stores.jobs.countPending(agent.userId);
    const controller = new AbortController();
    const call = paddedJson(
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "edit_image", arguments: { image: photo, prompt: "make it sepia", wait_seconds: 30 } },
      },
      400_000,
    );
    // Without workers (role api) the jobs never settle: each call waits its 30 s, or until abandoned.
    const calls = Array.from({ length: CALLS }, (_, index) =>
      fetch(`${app.url}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${agent.key}`,
          "content-type": "application/json",
          "x-forwarded-for": `192.0.2.${index + 1}`,
          ...mcpHeaders,
        },
        body: call,
        signal: controller.signal,
      }).catch(() => undefined),
    );
    try {
      await vi.waitFor(async () => expect((await app.services.stores.jobs.countPending(agent.userId)) - before).toBe(CALLS), {
        timeout: 10_000,
        interval: 20,
      });

      // 8 x 400 KB still held would leave no room for 1.5 MiB in the 4 MiB allowance.
      const submission = await submit(customer.key, 1.5 * MIB, "198.51.100.9");
      expect(submission.status, submission.text).toBe(200);
    } finally {
      controller.abort();
      await Promise.all(calls);
    }
  }, 30_000);
});

describe("routes that declared no policy take no body", () => {
  const routes: Array<[string, string]> = [
    ["POST", "/"],
    ["PUT", "/dashboard/keys"],
    ["POST", "/healthz"],
    ["GET", "/healthz"],
    ["POST", VERIFY_EMAIL_PATH],
    ["POST", "/docs"],
    ["POST", "/.well-known/oauth-authorization-server"],
    ["POST", "/files/anything"],
  ];

  it.each(routes)("%s %s with a body is 413, unread, and the connection closed", async (method, path) => {
    const answer = await rawUpload(app.url, { method, path, declared: MIB, send: 8 * 1024 });
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe("close");
    expect(answer.body).toEqual({ code: "payload_too_large", message: `${method} ${path} takes no request body.` });
  });

  it("still answers them without a body", async () => {
    expect((await request(app.url, "GET", "/healthz")).status).toBe(200);
    expect((await request(app.url, "GET", "/.well-known/oauth-authorization-server")).status).toBe(200);
  });
});

describe("client mistakes in the log", () => {
  it("an upload abandoned half-way is a warning without a stack, never an error", async () => {
    const from = app.logs.length;
    const upload = partialUpload({ authorization: `Bearer ${customer.key}`, "x-forwarded-for": "198.51.100.20" }, MIB);
    await upload.send(Buffer.alloc(64 * 1024, " "));
    // A wait left as it is: the server must be reading the body when it is cut, and nothing outside its sources says so.
    await sleep(200);
    upload.abandon();

    const lines = () => app.logs.slice(from).map((line) => JSON.parse(line) as Record<string, unknown>);
    await vi.waitFor(() => expect(lines().some((line) => line.msg === "request")).toBe(true), { timeout: 5_000, interval: 20 });
    const written = lines();
    expect(written.some((line) => line.level === 40 && String(line.msg).includes("ended before its announced length"))).toBe(
      true,
    );
    expect(written.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(written.filter((line) => "err" in line)).toEqual([]);
  });
});
