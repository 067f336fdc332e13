import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { openEvents, type SseEvent } from "../../../test/support/sse-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * GET /api/process/events over real HTTP: a job's and a batch's progress
 * stream, driven by the settlement notice, ending by itself; resumption with
 * Last-Event-ID; the refusals (401, 404, 400) and the per-account bound.
 */
let app: TestApp;

beforeAll(async () => {
  // A heartbeat every 200 ms, so a test sees one; at most 2 streams per account, so the bound is cheap to reach.
  app = await startTestApp({ RETOUCH_EVENT_STREAM_HEARTBEAT: "200ms", RETOUCH_EVENT_STREAMS_PER_ACCOUNT: "2" });
}, 60_000);

afterAll(async () => {
  await app?.close();
});

/** Every event until the server ends the stream. */
async function rest(events: { next(timeoutMs?: number): Promise<SseEvent | undefined> }): Promise<SseEvent[]> {
  const all: SseEvent[] = [];
  for (let event = await events.next(); event; event = await events.next()) all.push(event);
  return all;
}

/** A pending job no worker takes until `settle` enqueues it; its input is gone, so the worker fails it (refunded). */
async function heldJob(userId: string) {
  const jobId = await insertPendingJob(app.services, userId, { charge: true, inputBlob: "inputs/job_gone" });
  return { jobId, settle: () => app.services.queue.enqueueOnce(jobId) };
}

describe("a job's progress stream", { timeout: 60_000 }, () => {
  it("is open to the dashboard's session too: its playground follows its own jobs", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const { jobId, settle } = await heldJob(account.userId);
    const response = await fetch(`${app.url}/api/process/events?job_id=${jobId}`, { headers: { cookie: account.cookie } });
    expect(response.status).toBe(200);
    await settle();
    expect(await response.text()).toMatch(/event: status\ndata: \{"status":"error".*\}\nid: 1\n\n$/);
  });

  it("sends the pending status, then the terminal one with its metadata, and ends by itself", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const { jobId, settle } = await heldJob(account.userId);
    const events = await openEvents(app.url, `job_id=${jobId}`, { key: account.key });
    expect(events.response.status).toBe(200);
    expect(events.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(events.response.headers.get("cache-control")).toBe("no-cache");

    const pending = await events.next();
    expect(pending).toEqual({ event: "status", id: "0", data: { status: "pending" } });
    // Nothing happens while the job waits, except heartbeats that keep the connection open (one every 200 ms).
    await vi.waitFor(() => expect(events.comments).toContain("heartbeat"), { timeout: 5_000, interval: 20 });

    await settle();
    const terminal = await events.next();
    expect(terminal?.id).toBe("1");
    // Exactly what the status endpoint answers for the job: the same service code.
    const status = await request(app.url, "GET", `/api/process/status?job_id=${jobId}`, { key: account.key });
    expect(terminal?.data).toEqual(status.body);
    // Failed and refunded: the metadata block says so.
    expect(terminal?.data).toMatchObject({ status: "error", error_code: expect.any(String), credits_used: 0 });
    expect(await events.next()).toBeUndefined();
    await events.ended;
  });

  it("follows a real submission to `done` with the result's metadata", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const submitted = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: { image: base64(await productPhoto({ format: "jpeg" })), prompt: "make it sepia" },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const events = await openEvents(app.url, `job_id=${submitted.body.job_id}`, { key: account.key });
    const all = await rest(events);
    const last = all.at(-1);
    expect(last).toMatchObject({ event: "status", id: "1" });
    expect(last?.data).toMatchObject({ status: "done", width: 320, height: 240, format: "jpeg", credits_used: 1 });
    // Only changes are sent: a pending event (if the stream came early enough) and the terminal one.
    expect(all.map((event) => event.id)).toEqual(all.length === 2 ? ["0", "1"] : ["1"]);
  });
});

describe("a batch's progress stream", { timeout: 60_000 }, () => {
  it("sends an event per change with the batch's status and ends once every job is terminal", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const image = base64(await productPhoto({ format: "jpeg" }));
    const submitted = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: {
        images: [
          { image, prompt: "make it sepia" },
          { image, prompt: "make it black and white" },
          { image: "bm90IGFuIGltYWdl", prompt: "make it sepia" },
        ],
      },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const batchId = submitted.body.batch_id as string;
    const events = await openEvents(app.url, `batch_id=${batchId}`, { key: account.key });
    const all = await rest(events);
    expect(all.length).toBeGreaterThanOrEqual(1);
    // The id counts the batch's terminal jobs: it only grows, and the last names all three.
    const ids = all.map((event) => Number(event.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.at(-1)).toBe(3);
    const status = await request(app.url, "GET", `/api/process/status?batch_id=${batchId}`, { key: account.key });
    expect(all.at(-1)?.data).toEqual(status.body);
    expect(status.body.jobs.map((job: { status: string }) => job.status)).toEqual(["done", "done", "error"]);
  });

  it("sends one event per job as each settles, from a stream opened while all are pending", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const image = base64(await productPhoto({ format: "jpeg" }));
    const submitted = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: { images: [{ image, prompt: "make it sepia" }] },
    });
    const batchId = submitted.body.batch_id as string;
    const events = await openEvents(app.url, `batch_id=${batchId}`, { key: account.key });
    const all = await rest(events);
    expect(all.at(-1)).toMatchObject({ id: "1", data: { batch_id: batchId, jobs: [{ status: "done" }] } });
  });
});

describe("resuming with Last-Event-ID", { timeout: 60_000 }, () => {
  it("replays nothing already seen: a pending job resumed after its pending event waits for the terminal one", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const { jobId, settle } = await heldJob(account.userId);
    const events = await openEvents(app.url, `job_id=${jobId}`, { key: account.key, lastEventId: "0" });
    expect(events.response.status).toBe(200);
    await settle();
    const all = await rest(events);
    expect(all.map((event) => [event.id, (event.data as { status: string }).status])).toEqual([["1", "error"]]);
  });

  it("answers a terminal job resumed with its terminal event, then ends", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const { jobId, settle } = await heldJob(account.userId);
    await settle();
    const first = await rest(await openEvents(app.url, `job_id=${jobId}`, { key: account.key }));
    expect(first.map((event) => event.id)).toContain("1");
    const resumed = await rest(await openEvents(app.url, `job_id=${jobId}`, { key: account.key, lastEventId: "1" }));
    expect(resumed).toEqual([first.at(-1)]);
  });
});

describe("refusals", { timeout: 60_000 }, () => {
  it("401 without a key, before anything is looked up", async () => {
    const response = await fetch(`${app.url}/api/process/events?job_id=job_01jz8q5n7d3k2m4p6r8t0v2x4y`);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: "unauthorized" });
    const wrong = await fetch(`${app.url}/api/process/events?job_id=job_01jz8q5n7d3k2m4p6r8t0v2x4y`, {
      headers: { authorization: "Bearer pk_not_a_real_key" },
    });
    expect(wrong.status).toBe(401);
  });

  it("404 for another account's job or batch, as the status endpoint answers them", async () => {
    const owner = await keyedAccount(app, { plan: "core", credits: 20 });
    const stranger = await keyedAccount(app, { plan: "core", credits: 20 });
    const { jobId } = await heldJob(owner.userId);
    for (const query of [`job_id=${jobId}`, "batch_id=bat_01jz8q5n7d3k2m4p6r8t0v2x4y"]) {
      const events = await request(app.url, "GET", `/api/process/events?${query}`, { key: stranger.key });
      const status = await request(app.url, "GET", `/api/process/status?${query}`, { key: stranger.key });
      expect(events.status).toBe(404);
      expect(events.body.code).toBe("not_found");
      expect(events.body).toEqual(status.body);
    }
  });

  it("400 without exactly one of job_id and batch_id", async () => {
    const account = await keyedAccount(app);
    const response = await request(app.url, "GET", "/api/process/events", { key: account.key });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("invalid_request");
  });

  it("bounds the streams an account holds open: the next is 429 too_many_in_flight until one ends", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const other = await keyedAccount(app, { plan: "core", credits: 20 });
    const { jobId } = await heldJob(account.userId);
    const { jobId: otherJob } = await heldJob(other.userId);
    const open = [
      await openEvents(app.url, `job_id=${jobId}`, { key: account.key }),
      await openEvents(app.url, `job_id=${jobId}`, { key: account.key }),
    ];
    for (const events of open) expect((await events.next())?.id).toBe("0");
    const refused = await request(app.url, "GET", `/api/process/events?job_id=${jobId}`, { key: account.key });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("too_many_in_flight");
    expect(refused.headers.get("retry-after")).toBe("5");
    // Another account is not affected.
    const others = await openEvents(app.url, `job_id=${otherJob}`, { key: other.key });
    expect(others.response.status).toBe(200);
    others.close();
    // A stream the client drops gives its place back.
    open[0]?.close();
    const deadline = Date.now() + 10_000;
    let again = await openEvents(app.url, `job_id=${jobId}`, { key: account.key });
    while (again.response.status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = await openEvents(app.url, `job_id=${jobId}`, { key: account.key });
    }
    expect(again.response.status).toBe(200);
    again.close();
    open[1]?.close();
  });
});

describe("OpenAPI", () => {
  it("declares the stream with its media type, its Last-Event-ID and its own errors", async () => {
    const document = (await request(app.url, "GET", "/openapi.json")).body;
    const operation = document.paths["/api/process/events"].get;
    expect(Object.keys(operation.responses["200"].content)).toEqual(["text/event-stream"]);
    expect(operation.security).toEqual([{ bearerAuth: [] }, { sessionCookie: [] }]);
    expect(operation.parameters.map((parameter: { name: string }) => parameter.name)).toEqual([
      "job_id",
      "batch_id",
      "Last-Event-ID",
    ]);
    expect(Object.keys(operation.responses)).toEqual(["200", "400", "401", "404", "429", "500"]);
    expect(operation.responses["429"].content["application/json"].examples.too_many_in_flight).toBeDefined();
    expect(operation.responses["429"].headers["Retry-After"]).toBeDefined();
  });
});

describe("shutdown", { timeout: 60_000 }, () => {
  it("ends open streams at once instead of holding the drain", async () => {
    const own = await startTestApp({ RETOUCH_SHUTDOWN_TIMEOUT: "5s" });
    try {
      const account = await keyedAccount(own, { plan: "core", credits: 20 });
      const jobId = await insertPendingJob(own.services, account.userId, { charge: true });
      const events = await openEvents(own.url, `job_id=${jobId}`, { key: account.key });
      expect((await events.next())?.id).toBe("0");
      await own.close();
      await events.ended;
      // The drain did not wait its timeout out for the stream (it would have, and said so).
      expect(own.logs.join("")).not.toMatch(/shutdown timeout reached/);
    } catch (error) {
      await own.close().catch(() => {});
      throw error;
    }
  });
});
