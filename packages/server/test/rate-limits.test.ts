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
