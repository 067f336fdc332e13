import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/** The sliding-log limits on a real PostgreSQL, driven with an injected clock, and over HTTP. */
let app: TestApp;
let store: TestApp["services"]["stores"]["rateLimits"];
beforeAll(async () => {
  app = await startTestApp({}, { role: "api" });
  store = app.services.stores.rateLimits;
});
afterAll(() => app.close());

const MINUTE = 60_000;
let keys = 0;
const freshKey = () => `test:${process.pid}:${keys++}`;

describe("RateLimitsStore", () => {
  it("refuses the burst a fixed clock window lets through: 240 in 13 s across a minute boundary on 120/min", async () => {
    const key = freshKey();
    const boundary = Math.ceil(Date.now() / MINUTE) * MINUTE + 10 * MINUTE;
    const limit = { limit: 120, windowMs: MINUTE };
    const times = [
      ...Array.from({ length: 120 }, (_, i) => boundary - 6_500 + i * 50),
      ...Array.from({ length: 120 }, (_, i) => boundary + 500 + i * 50),
    ];
    const decisions = [];
    for (const now of times) decisions.push(await store.hit(key, { ...limit, now }));
    // Per clock minute all 240 fit (120 in each); over the 13 s span only 120 may.
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(120);
    const firstRefused = decisions[120];
    // The oldest of the 120 (boundary - 6.5 s) leaves the window at boundary + 53.5 s; asked at boundary + 0.5 s.
    expect(firstRefused).toEqual({ allowed: false, retryAfterSeconds: 53 });
    // And that is when the next one passes, not a second earlier.
    expect((await store.hit(key, { ...limit, now: boundary + 53_000 })).allowed).toBe(false);
    expect((await store.hit(key, { ...limit, now: boundary + 53_500 })).allowed).toBe(true);
  });

  it("admits exactly what a sliding window of the limit admits, for any arrival pattern, with an honest Retry-After", async () => {
    const key = freshKey();
    const limit = { limit: 5, windowMs: 10_000 };
    let now = Date.now() + 100 * MINUTE;
    const accepted: number[] = [];
    // A deterministic irregular pattern: bursts, gaps, batches of 1 to 3.
    for (let i = 0; i < 300; i++) {
      now += ((i * 7919) % 13) * 250;
      const amount = 1 + (i % 3);
      const decision = await store.hit(key, { ...limit, amount, now });
      const inWindow = accepted.filter((at) => at > now - limit.windowMs).length;
      expect(decision.allowed, `event ${i}`).toBe(inWindow + amount <= limit.limit);
      if (decision.allowed) for (let n = 0; n < amount; n++) accepted.push(now);
      else {
        // Honest: at now + Retry-After the same request fits; one second earlier it did not yet.
        const fitsAt = (at: number) => accepted.filter((t) => t > at - limit.windowMs).length + amount <= limit.limit;
        expect(fitsAt(now + decision.retryAfterSeconds * 1000)).toBe(true);
        if (decision.retryAfterSeconds > 1) expect(fitsAt(now + (decision.retryAfterSeconds - 1) * 1000 - 1)).toBe(false);
      }
    }
    expect(accepted.length).toBeGreaterThan(100);
  });

  it("is atomic under concurrency: 30 parallel hits on a limit of 10 admit exactly 10", async () => {
    const key = freshKey();
    const decisions = await Promise.all(Array.from({ length: 30 }, () => store.hit(key, { limit: 10, windowMs: MINUTE })));
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
  });

  it("takes a released event back, and forgets keys whose events are all old", async () => {
    const key = freshKey();
    const at = Date.now();
    const limit = { limit: 1, windowMs: MINUTE };
    expect((await store.hit(key, { ...limit, now: at })).allowed).toBe(true);
    expect((await store.hit(key, { ...limit, now: at + 1 })).allowed).toBe(false);
    await store.release([key], at);
    expect((await store.hit(key, { ...limit, now: at + 2 })).allowed).toBe(true);
    expect(await store.deleteOlderThan(new Date(at + 3))).toBeGreaterThanOrEqual(1);
    expect((await store.hit(key, { ...limit, now: at + 4 })).allowed).toBe(true);
  });
});

describe("the per-minute plan limit over HTTP", () => {
  it("refuses a burst that straddles the minute with the real wait in Retry-After, then admits it", async () => {
    const account = await keyedAccount(app, { plan: "free" });
    const photo = base64(await productPhoto());
    // The free plan's 5 images, submitted 57 s ago (possibly in the previous clock minute): written through the same
    // store and key the submissions service uses, as if they had come over HTTP then.
    const key = `submissions:${account.userId}`;
    expect((await store.hit(key, { limit: 5, windowMs: MINUTE, amount: 5, now: Date.now() - 57_000 })).allowed).toBe(true);

    const submit = () => request(app.url, "POST", "/api/process", { key: account.key, body: { image: photo, prompt: "sepia" } });
    const refused = await submit();
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("rate_limited");
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3);
    expect((await app.services.profiles.get(account.userId)).credits).toBe(10);

    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
    const admitted = await submit();
    expect(admitted.status, admitted.text).toBe(200);
  });
});

describe("X-RateLimit-* headers on every answer of a submission", () => {
  const figures = (headers: Headers) => ({
    limit: headers.get("x-ratelimit-limit"),
    remaining: headers.get("x-ratelimit-remaining"),
    reset: headers.get("x-ratelimit-reset"),
  });

  it("count down over REST to a 429 whose Retry-After is X-RateLimit-Reset, a batch counting as its images", async () => {
    const account = await keyedAccount(app, { plan: "starter" });
    const photo = base64(await productPhoto());
    // 10 of the starter plan's 15 images, 30 s ago, in the very log the limiter counts in.
    const key = `submissions:${account.userId}`;
    expect((await store.hit(key, { limit: 15, windowMs: MINUTE, amount: 10, now: Date.now() - 30_000 })).allowed).toBe(true);
    const submit = (body: unknown) => request(app.url, "POST", "/api/process", { key: account.key, body });
    const one = { image: photo, prompt: "sepia" };

    const first = await submit(one);
    expect(first.status, first.text).toBe(200);
    expect(figures(first.headers)).toEqual({ limit: "15", remaining: "4", reset: "0" });

    const batch = await submit({ images: [one, one, one] });
    expect(batch.status, batch.text).toBe(200);
    expect(figures(batch.headers)).toEqual({ limit: "15", remaining: "1", reset: "0" });

    // Two images do not fit in the one left: refused whole, and the figures say why (one left, none to wait for).
    const tooBig = await submit({ images: [one, one] });
    expect(tooBig.status, tooBig.text).toBe(429);
    expect(tooBig.body.code).toBe("rate_limited");
    expect(figures(tooBig.headers)).toEqual({ limit: "15", remaining: "1", reset: "0" });
    const wait = Number(tooBig.headers.get("retry-after"));
    expect(wait).toBeGreaterThanOrEqual(28);
    expect(wait).toBeLessThanOrEqual(31);

    const last = await submit(one);
    expect(last.status, last.text).toBe(200);
    const lastFigures = figures(last.headers);
    expect(lastFigures).toMatchObject({ limit: "15", remaining: "0" });
    // The 10 old images leave the window about 30 s after they were counted.
    expect(Number(lastFigures.reset)).toBeGreaterThanOrEqual(28);
    expect(Number(lastFigures.reset)).toBeLessThanOrEqual(31);

    const refused = await submit(one);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.code).toBe("rate_limited");
    const refusedFigures = figures(refused.headers);
    expect(refusedFigures).toMatchObject({ limit: "15", remaining: "0" });
    expect(refused.headers.get("retry-after")).toBe(refusedFigures.reset);
    // Accepted: 1 + 3 + 1 images; nothing charged for the refusals.
    expect((await app.services.profiles.get(account.userId)).credits).toBe(10 - 5);
  });

  it("come with the dashboard's playground.submit (tRPC) and MCP's edit_image, from the same count", async () => {
    const account = await keyedAccount(app, { plan: "free" });
    const photo = base64(await productPhoto());
    const played = await request(app.url, "POST", "/trpc/playground.submit", {
      cookie: account.cookie,
      headers: { origin: app.url },
      body: { image: photo, prompt: "sepia" },
    });
    expect(played.status, played.text).toBe(200);
    expect(figures(played.headers)).toEqual({ limit: "5", remaining: "4", reset: "0" });

    const mcp = await request(app.url, "POST", "/mcp", {
      key: account.key,
      headers: { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" },
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "edit_image", arguments: { image: photo, prompt: "sepia" } },
      },
    });
    expect(mcp.status, mcp.text).toBe(200);
    expect(mcp.body.result.isError, mcp.text).toBeFalsy();
    expect(figures(mcp.headers)).toEqual({ limit: "5", remaining: "3", reset: "0" });

    // The free plan runs 3 at once: the third pending job is refused (429 too_many_in_flight), with the figures.
    await request(app.url, "POST", "/api/process", { key: account.key, body: { image: photo, prompt: "sepia" } });
    const inFlight = await request(app.url, "POST", "/trpc/playground.submit", {
      cookie: account.cookie,
      headers: { origin: app.url },
      body: { image: photo, prompt: "sepia" },
    });
    expect(inFlight.status, inFlight.text).toBe(429);
    expect(inFlight.body.error.data.code).toBe("too_many_in_flight");
    expect(figures(inFlight.headers)).toEqual({ limit: "5", remaining: "2", reset: "0" });
  });
});
