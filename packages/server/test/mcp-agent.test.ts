import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { jobFailure } from "@retouch/core";
import pg from "pg";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { base64, productPhoto } from "../../../test/support/images";
import { jobCount } from "../../../test/support/jobs";
import { connectMcp } from "../../../test/support/mcp-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The MCP tools as an agent meets them: the official client over real HTTP,
 * having listed the tools first (so it checks every structuredContent against
 * the declared output schema), real photographs, a real image host on
 * loopback. `app` processes jobs and may fetch from loopback (the development
 * flag); `idle` serves the API only, so its jobs stay pending, and keeps the
 * production rules for image_url.
 */
let app: TestApp;
let idle: TestApp;
let coffee: Buffer;
let boats: Buffer;
const clients: Client[] = [];

/** The image host: a real photo at /coffee.jpg, a failing host at /down.jpg. */
const host = {
  url: "",
  server: undefined as Server | undefined,
  connections: 0,
  requests: [] as string[],
};

type Block = { type: string; text?: string; uri?: string; name?: string; mimeType?: string; size?: number; data?: string };
type ToolResult = { isError?: boolean; structuredContent?: Record<string, unknown>; content: Block[] };

async function agent(target: TestApp, account: KeyedAccount): Promise<Client> {
  const client = await connectMcp(target.url, account.key, "mcp-agent-test");
  clients.push(client);
  return client;
}
const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;
const errorOf = (result: ToolResult) => {
  expect(result.isError, JSON.stringify(result)).toBe(true);
  // structuredContent only where it matches the output schema: never on an error.
  expect(result.structuredContent).toBeUndefined();
  expect(result.content).toHaveLength(1);
  return JSON.parse(result.content[0]?.text ?? "{}") as Record<string, unknown> & { code: string; message: string };
};
const blocks = (result: ToolResult, type: string) => result.content.filter((block) => block.type === type);

async function jobIdsOf(target: TestApp, userId: string): Promise<string[]> {
  const db = new pg.Client({ connectionString: target.config.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string }>("select id from jobs where user_id = $1 order by created_at", [userId]);
    return rows.map((row) => row.id);
  } finally {
    await db.end();
  }
}

/** Until `check` holds (a call in flight has reached the database, a log line appeared), or fails after `ms`. */
async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  coffee = await readFile(new URL("../../engine/test/fixtures/coffee.jpg", import.meta.url));
  boats = await readFile(new URL("../../engine/test/fixtures/boats.jpg", import.meta.url));
  host.server = createServer((req, res) => {
    host.requests.push(req.url ?? "/");
    if (req.url === "/coffee.jpg") res.writeHead(200, { "Content-Type": "image/jpeg" }).end(coffee);
    else if (req.url === "/down.jpg") res.writeHead(503).end("maintenance");
    else res.writeHead(404).end("not found");
  });
  host.server.on("connection", () => host.connections++);
  await new Promise<void>((resolve) => host.server?.listen(0, "127.0.0.1", resolve));
  host.url = `http://127.0.0.1:${(host.server.address() as AddressInfo).port}`;
  [app, idle] = await Promise.all([
    startTestApp({ RETOUCH_WEBHOOK_ALLOW_INSECURE: "1", RETOUCH_QUEUE_POLL_INTERVAL: "200ms" }),
    startTestApp({}, { role: "api" }),
  ]);
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  host.server?.closeAllConnections();
  await new Promise<void>((resolve) => host.server?.close(() => resolve()));
  await Promise.all([app?.close(), idle?.close()]);
});

describe("happy paths", () => {
  it("edit_image with image_url and wait_seconds: the finished edit in one call, with its link and the picture itself", async () => {
    const account = await keyedAccount(app);
    const client = await agent(app, account);
    const result = await call(client, "edit_image", {
      image_url: `${host.url}/coffee.jpg`,
      prompt: "make it black and white",
      wait_seconds: 30,
    });
    expect(result.isError, JSON.stringify(result.content[0])).toBeFalsy();
    expect(host.requests).toContain("/coffee.jpg");
    const jobId = result.structuredContent?.job_id as string;
    expect(result.structuredContent).toEqual({
      status: "done",
      job_id: expect.stringMatching(/^job_/),
      url: expect.stringContaining(`/files/results/${jobId}.jpeg?`),
      expires_at: expect.any(String),
      width: 600,
      height: 400,
      format: "jpeg",
      credits_used: 1,
      credits_remaining: 9,
      processing_time_ms: expect.any(Number),
    });
    // The JSON text for clients that read text only, then the link, then the picture.
    expect(result.content.map((block) => block.type)).toEqual(["text", "resource_link", "image"]);
    expect(JSON.parse(result.content[0]?.text ?? "")).toEqual(result.structuredContent);
    const [link] = blocks(result, "resource_link");
    expect(link).toMatchObject({
      uri: result.structuredContent?.url,
      name: `${jobId}.jpeg`,
      mimeType: "image/jpeg",
      description: expect.stringMatching(/signed link, no credentials needed/),
    });
    // The link needs no key, and serves exactly the picture the agent was shown.
    const url = new URL(link?.uri as string);
    const download = await fetch(`${app.url}${url.pathname}${url.search}`);
    expect(download.status).toBe(200);
    const served = Buffer.from(await download.arrayBuffer());
    expect(link?.size).toBe(served.length);
    const [image] = blocks(result, "image");
    expect(image?.mimeType).toBe("image/jpeg");
    const shown = Buffer.from(image?.data as string, "base64");
    expect(shown.equals(served)).toBe(true);
    // It is the edit, not the input: the real photo came back grey.
    expect(await sharp(shown).metadata()).toMatchObject({ width: 600, height: 400, format: "jpeg" });
    const { channels } = await sharp(shown).stats();
    const [red, green, blue] = channels.map((channel) => channel.mean);
    expect(Math.abs((red as number) - (blue as number))).toBeLessThan(2);
    expect(Math.abs((red as number) - (green as number))).toBeLessThan(2);
    const original = (await sharp(coffee).stats()).channels.map((channel) => channel.mean);
    expect(Math.abs((original[0] as number) - (original[2] as number))).toBeGreaterThan(10);

    // get_job_result answers the same, without the status, with the same kinds of content.
    const again = await call(client, "get_job_result", { job_id: jobId });
    expect(again.structuredContent).toMatchObject({ job_id: jobId, format: "jpeg", width: 600, height: 400 });
    expect(again.structuredContent).not.toHaveProperty("status");
    expect(again.content.map((block) => block.type)).toEqual(["text", "resource_link", "image"]);
    expect(Buffer.from(blocks(again, "image")[0]?.data as string, "base64").equals(served)).toBe(true);
  });

  it("a result over 768 KiB comes as a link only; the link serves it", async () => {
    const account = await keyedAccount(app);
    const client = await agent(app, account);
    const result = await call(client, "edit_image", {
      image: base64(boats),
      prompt: "make it black and white",
      format: "png",
      wait_seconds: 30,
    });
    expect(result.structuredContent).toMatchObject({ status: "done", format: "png", width: 1264, height: 790 });
    expect(result.content.map((block) => block.type)).toEqual(["text", "resource_link"]);
    const [link] = blocks(result, "resource_link");
    expect(link?.size).toBeGreaterThan(768 * 1024);
    const url = new URL(link?.uri as string);
    const download = await fetch(`${app.url}${url.pathname}${url.search}`);
    expect(download.headers.get("content-type")).toBe("image/png");
    expect((await download.arrayBuffer()).byteLength).toBe(link?.size);
  });

  it("wait_seconds on a job still running: after the wait, its job_id and status pending, as without waiting", async () => {
    const account = await keyedAccount(idle);
    const client = await agent(idle, account);
    const photo = base64(await productPhoto());
    const result = await call(client, "edit_image", { image: photo, prompt: "make it sepia", wait_seconds: 1 });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ job_id: expect.stringMatching(/^job_/), credits_remaining: 9, status: "pending" });
    expect(result.content.map((block) => block.type)).toEqual(["text"]);
    // Without wait_seconds (or with 0): the answer of old.
    for (const args of [{}, { wait_seconds: 0 }]) {
      const quick = await call(client, "edit_image", { image: photo, prompt: "make it sepia", ...args });
      expect(quick.structuredContent).toEqual({ job_id: expect.stringMatching(/^job_/), credits_remaining: expect.any(Number) });
    }
  });

  it("a waiting call is woken by the settlement, whichever process settles it (the queue's notice, not a poll)", async () => {
    const account = await keyedAccount(idle);
    const client = await agent(idle, account);
    // 60 s of waiting is longer than this test may run: only the settlement's notice can end it in time.
    const pending = call(client, "edit_image", {
      image: base64(await productPhoto()),
      prompt: "make it sepia",
      wait_seconds: 60,
    });
    const [jobId] = await eventually(async () => {
      const ids = await jobIdsOf(idle, account.userId);
      return ids.length > 0 ? ids : undefined;
    });
    // What the maintenance sweep does to a job past its deadline, on the store's own connection.
    expect(await idle.services.stores.jobs.settleFailed(jobId as string, jobFailure("job_timeout", "test"))).toBeDefined();
    const failed = errorOf(await pending);
    expect(failed).toMatchObject({ code: "job_failed", error_code: "job_timeout", error: "Processing failed" });
    expect(failed.message).toMatch(new RegExp(`^Job ${jobId} failed \\(job_timeout\\): .+ Its credit was refunded\\.$`));
    expect((await idle.services.profiles.get(account.userId)).credits).toBe(10);
  });

  it("a call the client abandons stops waiting at once; the job itself goes on", async () => {
    const account = await keyedAccount(idle);
    const client = await agent(idle, account);
    const abandoned = call(client, "edit_image", {
      image: base64(await productPhoto()),
      prompt: "make it sepia",
      wait_seconds: 60,
    }).catch((error: unknown) => error);
    const [jobId] = await eventually(async () => {
      const ids = await jobIdsOf(idle, account.userId);
      return ids.length > 0 ? ids : undefined;
    });
    // The job exists, so the call is waiting now; closing the client aborts its HTTP request.
    await client.close();
    expect(await abandoned).toBeInstanceOf(Error);
    const line = await eventually(() =>
      idle.logs.find(
        (entry) => entry.includes("MCP call abandoned while waiting for its job") && entry.includes(jobId as string),
      ),
    );
    expect(JSON.parse(line)).toMatchObject({ jobId });
    const status = await call(await agent(idle, account), "get_job_status", { job_id: jobId });
    expect(status.structuredContent).toEqual({ status: "pending" });
  });
});

describe("errors, each a tool result with isError, the code and what to do", () => {
  it("not_found: an unknown job, on status and on result", async () => {
    const client = await agent(app, await keyedAccount(app));
    for (const name of ["get_job_status", "get_job_result"]) {
      const missing = errorOf(await call(client, name, { job_id: `job_${"0".repeat(26)}` }));
      expect(missing).toEqual({ code: "not_found", message: `No job job_${"0".repeat(26)}.` });
    }
    const malformed = errorOf(await call(client, "get_job_status", { job_id: "job_1" }));
    expect(malformed).toMatchObject({ code: "invalid_request", message: "Invalid request: job_id: must be a job id (job_...)" });
  });

  it("insufficient_credits and email_unverified, nothing charged", async () => {
    const photo = base64(await productPhoto());
    const broke = await keyedAccount(app, { credits: 0 });
    const empty = errorOf(await call(await agent(app, broke), "edit_image", { image: photo, prompt: "make it sepia" }));
    expect(empty).toEqual({
      code: "insufficient_credits",
      message: "This request needs 1 credit and your balance is 0; top up before retrying.",
    });

    const unverified = await keyedAccount(app);
    const db = new pg.Client({ connectionString: app.config.databaseUrl });
    await db.connect();
    await db.query(`update "user" set "emailVerified" = false where id = $1`, [unverified.userId]);
    await db.end();
    const refused = errorOf(await call(await agent(app, unverified), "edit_image", { image: photo, prompt: "make it sepia" }));
    expect(refused).toEqual({ code: "email_unverified", message: expect.stringMatching(/^Verify your email address first/) });
    expect((await app.services.profiles.get(unverified.userId)).credits).toBe(10);
    expect(await jobCount(app.config.databaseUrl as string, unverified.userId)).toBe(0);
  });

  it("invalid_request (bad base64, not an image) and unsupported_instruction: nothing charged, no job", async () => {
    const account = await keyedAccount(app);
    const client = await agent(app, account);
    const badBase64 = errorOf(await call(client, "edit_image", { image: "%%% not base64 %%%", prompt: "make it sepia" }));
    expect(badBase64).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^image: .*base64/) });
    const notImage = errorOf(
      await call(client, "edit_image", { image: base64(Buffer.from("just text")), prompt: "make it sepia" }),
    );
    expect(notImage).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/JPEG, PNG or WebP/) });
    const semantic = errorOf(
      await call(client, "edit_image", { image: base64(coffee), prompt: "make it a watercolour painting", wait_seconds: 5 }),
    );
    expect(semantic).toMatchObject({
      code: "unsupported_instruction",
      message: expect.stringMatching(/GET \/api\/capabilities/),
    });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(10);
    expect(await jobCount(app.config.databaseUrl as string, account.userId)).toBe(0);
  });

  it("image_fetch_failed: the host of image_url fails; nothing charged", async () => {
    const account = await keyedAccount(app);
    const client = await agent(app, account);
    const failed = errorOf(
      await call(client, "edit_image", { image_url: `${host.url}/down.jpg`, prompt: "make it sepia", idempotency_key: "down-1" }),
    );
    expect(failed).toMatchObject({ code: "image_fetch_failed", message: expect.stringMatching(/retry/i) });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(10);
  });

  it("job_failed from wait_seconds: why the edit failed, and the refund", async () => {
    const account = await keyedAccount(app);
    const client = await agent(app, account);
    const failed = errorOf(
      await call(client, "edit_image", { image: base64(await productPhoto()), prompt: "remove the giraffe", wait_seconds: 30 }),
    );
    expect(failed).toMatchObject({
      code: "job_failed",
      error: "Processing failed",
      error_code: "nothing_detected",
      error_message: "No giraffe was found in the image.",
    });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(10);
  });

  it("rate_limited: the sixth edit in a minute on the free plan, with retry_after_seconds (no header reaches an agent)", async () => {
    const account = await keyedAccount(app);
    const client = await agent(app, account);
    const photo = base64(await productPhoto());
    // Each edit finishes before the next (wait_seconds), so the in-flight limit (3) never answers first.
    for (let i = 0; i < 5; i++) {
      const done = await call(client, "edit_image", { image: photo, prompt: "make it sepia", wait_seconds: 30 });
      expect(done.structuredContent?.status).toBe("done");
    }
    const limited = errorOf(await call(client, "edit_image", { image: photo, prompt: "make it sepia" }));
    expect(limited).toMatchObject({
      code: "rate_limited",
      message: expect.stringMatching(/^Your free plan accepts 5 images per minute; retry after \d+ s\.$/),
      retry_after_seconds: expect.any(Number),
    });
    expect(limited.retry_after_seconds).toBeGreaterThan(0);
    expect(limited.retry_after_seconds).toBeLessThanOrEqual(60);
    expect((await app.services.profiles.get(account.userId)).credits).toBe(5);
  });

  it("an unknown tool is a protocol error (-32602), as the MCP spec says", async () => {
    const client = await agent(app, await keyedAccount(app));
    await expect(client.callTool({ name: "delete_everything", arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/Unknown tool delete_everything/),
    });
  });
});

describe("security", () => {
  it("another account's job is not found, on status and on result, as an unknown one is", async () => {
    const owner = await keyedAccount(app);
    const done = await call(await agent(app, owner), "edit_image", {
      image: base64(await productPhoto()),
      prompt: "make it sepia",
      wait_seconds: 30,
    });
    const jobId = done.structuredContent?.job_id as string;
    expect(done.structuredContent?.status).toBe("done");
    const stranger = await agent(app, await keyedAccount(app));
    for (const name of ["get_job_status", "get_job_result"])
      expect(errorOf(await call(stranger, name, { job_id: jobId }))).toEqual({ code: "not_found", message: `No job ${jobId}.` });
  });

  it("the result link is the only credential: a tampered signature is refused", async () => {
    const account = await keyedAccount(app);
    const result = await call(await agent(app, account), "edit_image", {
      image: base64(await productPhoto()),
      prompt: "make it sepia",
      wait_seconds: 30,
    });
    const url = new URL(blocks(result, "resource_link")[0]?.uri as string);
    const signature = [...url.searchParams.keys()].find((name) => name !== "expires") as string;
    url.searchParams.set(signature, `${url.searchParams.get(signature)?.slice(0, -2)}xx`);
    const tampered = await fetch(`${app.url}${url.pathname}${url.search}`);
    expect(tampered.status).toBe(403);
    expect(((await tampered.json()) as { code: string }).code).toBe("signed_url_invalid");
  });

  it("image_url to loopback under the production rules: invalid_request before any connection, nothing charged", async () => {
    const account = await keyedAccount(idle);
    const client = await agent(idle, account);
    const connections = host.connections;
    for (const image_url of [`${host.url}/coffee.jpg`, `https://127.0.0.1:${new URL(host.url).port}/coffee.jpg`]) {
      const refused = errorOf(await call(client, "edit_image", { image_url, prompt: "make it sepia", wait_seconds: 5 }));
      expect(refused).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^image_url: /) });
    }
    expect(host.connections).toBe(connections);
    expect((await idle.services.profiles.get(account.userId)).credits).toBe(10);
  });
});
