import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp, type TestAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Failed sign-ins, throttled per address and per account, over real HTTP.
 * The app trusts X-Forwarded-For, so each test speaks from its own addresses.
 */
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_TRUST_PROXY: "1" });
});
afterAll(() => app.close());

let addresses = 0;
const freshAddress = () => `198.51.100.${++addresses}`;

const signIn = (email: string, password: string, address: string) =>
  request(app.url, "POST", "/auth/sign-in/email", { body: { email, password }, headers: { "x-forwarded-for": address } });

describe("per address", () => {
  let victim: TestAccount;
  let other: TestAccount;
  const attacker = freshAddress();
  beforeAll(async () => {
    victim = await signUp(app.url);
    other = await signUp(app.url);
  });

  it("answers 40 wrong passwords in a row with 401 ten times, then 429 with Retry-After", async () => {
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof signIn>> | undefined;
    for (let i = 0; i < 40; i++) {
      last = await signIn(victim.email, `wrong password ${i}`, attacker);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([...Array(10).fill(401), ...Array(30).fill(429)]);
    expect(last?.body).toEqual({ code: "rate_limited", message: expect.stringMatching(/failed sign-ins/) });
    const retryAfter = Number(last?.headers.get("retry-after"));
    // The first failure leaves the 15-minute window in a little under 15 minutes.
    expect(retryAfter).toBeGreaterThan(14 * 60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
  });

  it("counts the address the proxy appended, whatever the client wrote before it in X-Forwarded-For", async () => {
    // A client that prepends a fresh address to each request is still the last entry's address: still throttled.
    const response = await signIn(victim.email, "wrong password again", `203.0.113.${++addresses}, ${attacker}`);
    expect(response.status).toBe(429);
  });

  it("does not tell the throttled address that a password is right", async () => {
    const response = await signIn(victim.email, victim.password, attacker);
    expect(response.status).toBe(429);
    expect(response.headers.getSetCookie()).toEqual([]);
  });

  it("does not stop other accounts, nor the owner, from other addresses", async () => {
    expect((await signIn(other.email, other.password, freshAddress())).status).toBe(200);
    // The victim's account has 10 failures, below its own limit (50): one address cannot lock the owner out.
    expect((await signIn(victim.email, victim.password, freshAddress())).status).toBe(200);
  });

  it("holds under parallel guesses: 30 at once from a fresh address get 10 answers, the rest 429", async () => {
    const target = await signUp(app.url);
    const address = freshAddress();
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => signIn(target.email, `parallel guess ${i}`, address)),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
  });

  it("does not count successful sign-ins", async () => {
    const account = await signUp(app.url);
    const address = freshAddress();
    for (let i = 0; i < 15; i++) expect((await signIn(account.email, account.password, address)).status).toBe(200);
  });
});

describe("per account", () => {
  it("locks an account that many addresses guess at (50 failures), for every address, until the window slides", async () => {
    const target = await signUp(app.url);
    const statuses: number[] = [];
    for (let group = 0; group < 6; group++) {
      const address = freshAddress();
      for (let i = 0; i < 10; i++) statuses.push((await signIn(target.email, `guess ${group}-${i}`, address)).status);
    }
    expect(statuses).toEqual([...Array(50).fill(401), ...Array(10).fill(429)]);
    const owner = await signIn(target.email, target.password, freshAddress());
    expect(owner.status).toBe(429);
    expect(Number(owner.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another account from yet another address is unaffected.
    const bystander = await signUp(app.url);
    expect((await signIn(bystander.email, bystander.password, freshAddress())).status).toBe(200);
  });
});
