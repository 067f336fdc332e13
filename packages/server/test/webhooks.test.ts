import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { type ReceivedCall, WebhookReceiver } from "../../../test/support/webhook-receiver";

/** Settlement callbacks to a real receiver on loopback (http allowed by the development switch). */
let app: TestApp;
let receiver: WebhookReceiver;
let account: KeyedAccount;
let photo: string;
let secrets: { secret: string; standard_webhooks_secret: string };

beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  app = await startTestApp({
    RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
    RETOUCH_WEBHOOK_RETRY_DELAYS: "1s,2s",
    RETOUCH_WEBHOOK_TIMEOUT: "1s",
    RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
  });
  account = await keyedAccount(app, { plan: "pro", credits: 50 });
  photo = base64(await productPhoto());
  secrets = (await request(app.url, "GET", "/api/webhooks/secret", { key: account.key })).body;
});
afterAll(async () => {
  await app.close();
  await receiver.stop();
});

function verifyRetouchSignature(call: ReceivedCall): boolean {
  const timestamp = call.headers["x-retouch-timestamp"] as string;
  const expected = `sha256=${createHmac("sha256", secrets.secret).update(`${timestamp}.${call.rawBody}`).digest("hex")}`;
  return call.headers["x-retouch-signature"] === expected;
}

async function submitWithHook(path: string, prompt = "make it sepia") {
  const response = await request(app.url, "POST", "/api/process", {
    key: account.key,
    body: { image: photo, prompt, webhook_url: `${receiver.url}${path}` },
  });
  expect(response.status, response.text).toBe(200);
  return response.body.job_id as string;
}

async function deliveries() {
  return (await request(app.url, "GET", "/api/webhooks/deliveries?limit=100", { key: account.key })).body.deliveries as Array<
    Record<string, unknown>
  >;
}

describe("a done job's callback", () => {
  it("is one POST with the spec's fields, signed with the account's secret in both schemes", async () => {
    const jobId = await submitWithHook("/done");
    const [call] = await receiver.waitFor("/done", 1);
    if (!call) throw new Error("no call");
    const body = JSON.parse(call.rawBody);
    expect(Object.keys(body).sort()).toEqual(
      [
        "credits_remaining",
        "credits_used",
        "format",
        "height",
        "job_id",
        "processing_time_ms",
        "result_url",
        "status",
        "width",
      ].sort(),
    );
    expect(body).toMatchObject({ job_id: jobId, status: "done", width: 320, height: 240, format: "jpeg", credits_used: 1 });
    expect(call.headers["content-type"]).toBe("application/json");
    expect(Math.abs(Number(call.headers["x-retouch-timestamp"]) - Date.now())).toBeLessThan(30_000);
    expect(verifyRetouchSignature(call)).toBe(true);
    // An off-the-shelf Standard Webhooks verifier accepts it too.
    const verified = new Webhook(secrets.standard_webhooks_secret).verify(call.rawBody, {
      "webhook-id": call.headers["webhook-id"] as string,
      "webhook-timestamp": call.headers["webhook-timestamp"] as string,
      "webhook-signature": call.headers["webhook-signature"] as string,
    });
    expect(verified).toMatchObject({ job_id: jobId });
    // The signed link works.
    const link = new URL(body.result_url);
    const image = await fetch(`${app.url}${link.pathname}${link.search}`);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/jpeg");

    const listed = (await deliveries()).find((delivery) => delivery.job_id === jobId);
    expect(listed).toMatchObject({
      status: "delivered",
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      id: call.headers["webhook-id"],
    });
  });
});

describe("retries", () => {
  it("a receiver that answers 500 twice is retried, spaced as configured, then acknowledged", async () => {
    receiver.script("/flaky", [500, 500, 200]);
    const jobId = await submitWithHook("/flaky");
    const calls = await receiver.waitFor("/flaky", 3);
    const [first, second, third] = calls as [ReceivedCall, ReceivedCall, ReceivedCall];
    expect(second.at - first.at).toBeGreaterThanOrEqual(950);
    expect(third.at - second.at).toBeGreaterThanOrEqual(1950);
    // Each attempt is signed afresh, under the same message id, with a fresh result link.
    expect(new Set(calls.map((call) => call.headers["webhook-id"])).size).toBe(1);
    expect(new Set(calls.map((call) => call.headers["x-retouch-timestamp"])).size).toBe(3);
    for (const call of calls) expect(verifyRetouchSignature(call)).toBe(true);
    expect(new Set(calls.map((call) => JSON.parse(call.rawBody).result_url)).size).toBe(3);
    // The third answer is recorded just after it arrives: look until it shows.
    await vi.waitFor(
      async () =>
        expect((await deliveries()).find((delivery) => delivery.job_id === jobId)).toMatchObject({
          status: "delivered",
          attempts: 3,
          last_status_code: 200,
        }),
      { timeout: 10_000, interval: 20 },
    );
    expect(receiver.callsTo("/flaky")).toHaveLength(3);
  });

  it("does not follow redirects: a 302 is a failed attempt, and gives up after the last retry", async () => {
    receiver.script("/moved", [302]);
    const jobId = await submitWithHook("/moved");
    await receiver.waitFor("/moved", 3);
    // Once the last attempt is recorded as failed it has ended: a followed redirect would have reached the receiver by then.
    let listed: Record<string, unknown> | undefined;
    await vi.waitFor(
      async () => {
        listed = (await deliveries()).find((delivery) => delivery.job_id === jobId);
        expect(listed).toMatchObject({ status: "failed", attempts: 3, last_status_code: 302, next_attempt_at: null });
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(receiver.callsTo("/redirected")).toHaveLength(0);
    expect(receiver.callsTo("/moved")).toHaveLength(3);
    expect(listed?.last_error).toMatch(/redirects are not followed/);
  });

  it("counts a receiver that never answers as a failed attempt (timeout) and retries", async () => {
    receiver.script("/slow", [0, 200]);
    const jobId = await submitWithHook("/slow");
    await receiver.waitFor("/slow", 2, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const listed = (await deliveries()).find((delivery) => delivery.job_id === jobId);
    expect(listed).toMatchObject({ status: "delivered", attempts: 2 });
  });

  it("a restart while an attempt is in flight waits for it, so its retry is not lost", async () => {
    // The receiver answers the first attempt 500, late: the service is stopping meanwhile.
    receiver.script("/inflight", [{ status: 500, afterMs: 1500 }, 200]);
    const jobId = await submitWithHook("/inflight");
    await receiver.waitFor("/inflight", 1);
    await app.restart();
    // Without waiting for the attempt, its retry would be scheduled by nobody until the sweep.
    const calls = await receiver.waitFor("/inflight", 2, 15_000);
    expect(JSON.parse(calls[1]?.rawBody as string).job_id).toBe(jobId);
  });

  it("survives a restart of the service between attempts", async () => {
    receiver.script("/restart", [500, 200]);
    const jobId = await submitWithHook("/restart");
    await receiver.waitFor("/restart", 1);
    await app.restart();
    const calls = await receiver.waitFor("/restart", 2, 20_000);
    expect(JSON.parse(calls[1]?.rawBody as string).job_id).toBe(jobId);
    expect(verifyRetouchSignature(calls[1] as ReceivedCall)).toBe(true);
  });
});

describe("a failed job's callback", () => {
  it("says status error and 'Processing failed', and why, after the refund", async () => {
    const before = (await app.services.profiles.get(account.userId)).credits;
    const jobId = await submitWithHook("/failed", "remove the giraffe");
    const [call] = await receiver.waitFor("/failed", 1);
    const body = JSON.parse(call?.rawBody as string);
    expect(body).toEqual({
      job_id: jobId,
      status: "error",
      error: "Processing failed",
      error_code: "nothing_detected",
      error_message: "No giraffe was found in the image.",
      width: 320,
      height: 240,
      format: "jpeg",
      credits_used: 0,
      credits_remaining: before,
      processing_time_ms: expect.any(Number),
    });
    expect((await waitForJob(app.url, account.key, jobId)).status).toBe("error");
  });
});

describe("a batch", () => {
  it("sends each item's callback to its own webhook_url, once", async () => {
    const response = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: {
        images: [
          { image: photo, prompt: "make it sepia", webhook_url: `${receiver.url}/item-a` },
          { image: photo, prompt: "make it black and white", webhook_url: `${receiver.url}/item-b` },
          { image: photo, prompt: "make it brighter" },
        ],
      },
    });
    const [a, b] = response.body.jobs as Array<{ job_id: string }>;
    const [callA] = await receiver.waitFor("/item-a", 1);
    const [callB] = await receiver.waitFor("/item-b", 1);
    expect(JSON.parse(callA?.rawBody as string).job_id).toBe(a?.job_id);
    expect(JSON.parse(callB?.rawBody as string).job_id).toBe(b?.job_id);
    // Every item settled and both callbacks recorded as delivered at the first attempt: no retry is due, and each job has
    // one delivery. Then a short window, not a wait: a duplicate sent alongside the first would land within it.
    for (const job of response.body.jobs as Array<{ job_id: string }>) await waitForJob(app.url, account.key, job.job_id);
    await vi.waitFor(
      async () => {
        const listed = (await deliveries()).filter((delivery) => delivery.job_id === a?.job_id || delivery.job_id === b?.job_id);
        expect(listed).toHaveLength(2);
        for (const delivery of listed) expect(delivery).toMatchObject({ status: "delivered", attempts: 1 });
      },
      { timeout: 10_000, interval: 20 },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.callsTo("/item-a")).toHaveLength(1);
    expect(receiver.callsTo("/item-b")).toHaveLength(1);
  });
});

describe("without the development switch", () => {
  it("refuses http:// and private targets at submission (400)", async () => {
    const strict = await startTestApp({}, { role: "api" });
    try {
      const owner = await keyedAccount(strict);
      for (const url of [`${receiver.url}/x`, "https://127.0.0.1/x", "https://192.168.1.10/x", "https://[::1]/x"]) {
        const response = await request(strict.url, "POST", "/api/process", {
          key: owner.key,
          body: { image: photo, prompt: "x", webhook_url: url },
        });
        expect(response.status, url).toBe(400);
        expect(response.body.message).toMatch(/webhook_url/);
      }
      expect((await strict.services.profiles.get(owner.userId)).credits).toBe(10);
    } finally {
      await strict.close();
    }
  });
});
