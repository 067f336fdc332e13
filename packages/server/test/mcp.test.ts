import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { base64, productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { connectMcp } from "../../../test/support/mcp-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/** The MCP endpoint through the SDK's own client over real HTTP. */
let app: TestApp;
let account: KeyedAccount;
let photo: string;
const clients: Client[] = [];

async function connect(key: string): Promise<Client> {
  const client = await connectMcp(app.url, key);
  clients.push(client);
  return client;
}

type ToolResult = {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: Array<{ type: string; text?: string }>;
};
const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;
const errorOf = (result: ToolResult) => JSON.parse(result.content[0]?.text ?? "{}") as { code: string; message: string };

async function waitUntilSettled(client: Client, jobId: string): Promise<Record<string, unknown>> {
  return vi.waitFor(
    async () => {
      const status = await call(client, "get_job_status", { job_id: jobId });
      if (status.structuredContent?.status === "pending") throw new Error(`${jobId} still pending`);
      return status.structuredContent ?? {};
    },
    { timeout: 60_000, interval: 50 },
  );
}

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  account = await keyedAccount(app, { plan: "pro" });
  photo = base64(await productPhoto());
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await app.close();
});

describe("initialize and tools/list", () => {
  it("offers the three tools, with input schemas from the same zod schemas (no $ref)", async () => {
    const client = await connect(account.key);
    expect(client.getServerVersion()).toMatchObject({ name: "retouch", version: "1.0.0" });
    expect(client.getInstructions()).toMatch(/get_job_status every 2-5 seconds/);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(["edit_image", "get_job_result", "get_job_status"]);
    expect(JSON.stringify(tools)).not.toContain("$ref");
    const edit = tools.find((tool) => tool.name === "edit_image");
    // image or image_url: exactly one, checked by the service (a JSON Schema "oneOf" would confuse many clients).
    expect(edit?.inputSchema.required?.sort()).toEqual(["prompt"]);
    expect(Object.keys(edit?.inputSchema.properties ?? {}).sort()).toEqual(
      [
        "detect",
        "format",
        "idempotency_key",
        "image",
        "image_url",
        "mask",
        "mask_url",
        "negative_prompt",
        "prompt",
        "quality",
        "wait_seconds",
        "webhook_url",
      ].sort(),
    );
    expect((edit?.inputSchema.properties?.format as { enum?: string[] } | undefined)?.enum).toEqual(["jpeg", "png", "webp"]);
    // The bound is in the schema and in words.
    const wait = edit?.inputSchema.properties?.wait_seconds as {
      type: string;
      minimum: number;
      maximum: number;
      description: string;
    };
    expect(wait).toMatchObject({ type: "integer", minimum: 0, maximum: 60, description: expect.stringContaining("0 to 60") });
    expect(Object.keys(edit?.outputSchema?.properties ?? {})).toEqual(
      expect.arrayContaining(["job_id", "credits_remaining", "status", "url", "width", "height", "format"]),
    );
    expect(edit?.outputSchema?.required?.sort()).toEqual(["credits_remaining", "job_id"]);
    for (const name of ["get_job_status", "get_job_result"]) {
      const tool = tools.find((candidate) => candidate.name === name);
      expect(tool?.inputSchema.required).toEqual(["job_id"]);
      expect(tool?.outputSchema?.type).toBe("object");
      expect(tool?.description?.length).toBeGreaterThan(40);
    }
  });

  it("gives each tool a title, the behaviour hints that hold, and a description that teaches the submit, status, result loop", async () => {
    const client = await connect(account.key);
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(byName.edit_image).toMatchObject({
      title: "Edit an image",
      // Not read-only (it charges and creates a job), but nothing it does destroys anything; idempotent with an
      // idempotency_key; open world: it fetches image_url from the internet.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    });
    for (const name of ["get_job_status", "get_job_result"])
      expect(byName[name]?.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true, openWorldHint: false });
    expect(byName.get_job_status?.title).toBe("Check an edit's progress");
    expect(byName.get_job_result?.title).toBe("Get the edited image");
    // Each description says where it stands in the loop and what comes next.
    expect(byName.edit_image?.description).toMatch(/^Step 1 of 3:.*get_job_status every 2-5 s.*get_job_result.*wait_seconds/s);
    expect(byName.get_job_status?.description).toMatch(/^Step 2 of 3:.*then get_job_result/s);
    expect(byName.get_job_result?.description).toMatch(/^Step 3 of 3:.*resource_link.*image content/s);
    expect(client.getInstructions()).toMatch(/wait_seconds \(up to 60\)/);
  });
});

describe("the tools", () => {
  it("edit_image -> get_job_status -> get_job_result: debits one credit and ends with a working link", async () => {
    const client = await connect(account.key);
    const before = (await app.services.profiles.get(account.userId)).credits;
    const started = await call(client, "edit_image", { image: photo, prompt: "remove the background", format: "jpeg" });
    expect(started.isError).toBeFalsy();
    expect(started.structuredContent).toEqual({ job_id: expect.stringMatching(/^job_/), credits_remaining: before - 1 });
    const jobId = started.structuredContent?.job_id as string;
    const status = await waitUntilSettled(client, jobId);
    expect(status).toMatchObject({ status: "done", format: "png", width: 320, height: 240, credits_used: 1 });
    const result = await call(client, "get_job_result", { job_id: jobId });
    expect(result.structuredContent).toMatchObject({
      job_id: jobId,
      format: "png",
      url: expect.stringContaining("/files/results/"),
    });
    const link = new URL(result.structuredContent?.url as string);
    const image = await fetch(`${app.url}${link.pathname}${link.search}`);
    expect(image.headers.get("content-type")).toBe("image/png");
  });

  it("get_job_result answers status pending while the job runs", async () => {
    const client = await connect(account.key);
    // A pending job that no worker will take (it is never enqueued).
    const jobId = await insertPendingJob(app.services, account.userId);
    const result = await call(client, "get_job_result", { job_id: jobId });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ job_id: jobId, status: "pending" });
    expect((await call(client, "get_job_status", { job_id: jobId })).structuredContent).toEqual({ status: "pending" });
  });

  it("a failed edit is refunded and says why: get_job_status, and get_job_result's tool error with job_failed", async () => {
    const client = await connect(account.key);
    const before = (await app.services.profiles.get(account.userId)).credits;
    const started = await call(client, "edit_image", { image: photo, prompt: "remove the giraffe" });
    const jobId = started.structuredContent?.job_id as string;
    const why = { error_code: "nothing_detected", error_message: "No giraffe was found in the image." };
    expect(await waitUntilSettled(client, jobId)).toMatchObject({
      status: "error",
      error: "Processing failed",
      ...why,
      credits_used: 0,
    });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before);
    const result = await call(client, "get_job_result", { job_id: jobId });
    expect(result.isError).toBe(true);
    expect(errorOf(result)).toMatchObject({ code: "job_failed", error: "Processing failed", ...why });
  });

  it("honours idempotency_key like the Idempotency-Key header", async () => {
    const client = await connect(account.key);
    const before = (await app.services.profiles.get(account.userId)).credits;
    const args = { image: photo, prompt: "make it sepia", idempotency_key: "agent-retry-1" };
    const first = await call(client, "edit_image", args);
    const again = await call(client, "edit_image", args);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before - 1);
    const reused = await call(client, "edit_image", { ...args, prompt: "make it black and white" });
    expect(errorOf(reused).code).toBe("idempotency_key_reused");
  });
});

describe("error paths, as tool errors with the spec code", () => {
  it("validation: the same messages as REST, nothing charged", async () => {
    const client = await connect(account.key);
    const before = (await app.services.profiles.get(account.userId)).credits;
    const bad = await call(client, "edit_image", { image: base64(Buffer.from("not an image")), prompt: "make it sepia" });
    expect(bad.isError).toBe(true);
    expect(errorOf(bad)).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/JPEG, PNG or WebP/) });
    // Arguments outside the tool's schema are the service's invalid_request too, not the SDK's own text.
    const badQuality = await call(client, "edit_image", { image: photo, prompt: "x", quality: 400 });
    expect(badQuality.isError).toBe(true);
    expect(badQuality.structuredContent).toBeUndefined();
    expect(errorOf(badQuality)).toMatchObject({
      code: "invalid_request",
      message: "Invalid request: quality: must be an integer from 1 to 100",
      issues: [{ path: "quality", message: "must be an integer from 1 to 100" }],
    });
    const tooLong = await call(client, "edit_image", { image: photo, prompt: "x", wait_seconds: 61 });
    expect(errorOf(tooLong)).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/wait_seconds: .*0 to 60/),
    });
    const noImage = await call(client, "edit_image", { prompt: "make it sepia" });
    expect(errorOf(noImage)).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/image/) });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before);
  });

  it("email_unverified, insufficient_credits, too_many_in_flight and not_found", async () => {
    const unverified = await keyedAccount(app);
    const db = new pg.Client({ connectionString: app.config.databaseUrl });
    await db.connect();
    await db.query(`update "user" set "emailVerified" = false where id = $1`, [unverified.userId]);
    await db.end();
    const unverifiedClient = await connect(unverified.key);
    expect(errorOf(await call(unverifiedClient, "edit_image", { image: photo, prompt: "make it sepia" })).code).toBe(
      "email_unverified",
    );

    const broke = await keyedAccount(app, { credits: 0 });
    const brokeClient = await connect(broke.key);
    expect(errorOf(await call(brokeClient, "edit_image", { image: photo, prompt: "make it sepia" })).code).toBe(
      "insufficient_credits",
    );

    const free = await keyedAccount(app);
    const freeClient = await connect(free.key);
    const big = base64(await productPhoto({ width: 2400, height: 1800 }));
    const results = await Promise.all(
      Array.from({ length: 4 }, () => call(freeClient, "edit_image", { image: big, prompt: "remove the background" })),
    );
    const codes = results.map((result) => (result.isError ? errorOf(result).code : "ok"));
    expect(codes.filter((code) => code === "too_many_in_flight")).toHaveLength(1);

    const missing = await call(freeClient, "get_job_status", { job_id: `job_${"0".repeat(26)}` });
    expect(errorOf(missing).code).toBe("not_found");
  });
});

describe("the HTTP edge", () => {
  const rpc = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${app.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
        authorization: `Bearer ${account.key}`,
        ...headers,
      },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  it("answers 401 with WWW-Authenticate without a valid key", async () => {
    for (const authorization of ["", "Bearer pk_wrong"]) {
      const response = await rpc({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }, { authorization });
      expect(response.status).toBe(401);
      // RFC 9728: where an MCP client learns how to get a token (docs/oauth.md; oauth.test.ts follows it).
      expect(response.headers.get("www-authenticate")).toMatch(
        /^Bearer resource_metadata="http:.*\/\.well-known\/oauth-protected-resource\/mcp"/,
      );
    }
    const client = new Client({ name: "no-key", version: "1" });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`)))).rejects.toThrow();
  });

  it("answers a JSON-RPC batch array with an array of responses", async () => {
    const response = await rpc([
      { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
      {
        jsonrpc: "2.0",
        id: "two",
        method: "tools/call",
        params: { name: "get_job_status", arguments: { job_id: `job_${"0".repeat(26)}` } },
      },
    ]);
    expect(response.status).toBe(200);
    const replies = (await response.json()) as Array<{ id: number | string; result: { tools?: unknown[]; isError?: boolean } }>;
    expect(replies).toHaveLength(2);
    const byId = new Map(replies.map((reply) => [reply.id, reply.result]));
    expect(byId.get(1)?.tools).toHaveLength(3);
    expect(byId.get("two")?.isError).toBe(true);
  });

  it("answers a notification with 202 and no body", async () => {
    const response = await rpc({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(response.status).toBe(202);
    expect(await response.text()).toBe("");
  });

  it("answers malformed JSON with a JSON-RPC parse error, and GET with 405", async () => {
    const malformed = await rpc("{not json");
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const get = await fetch(`${app.url}/mcp`, { headers: { authorization: `Bearer ${account.key}` } });
    expect(get.status).toBe(405);
  });
});
