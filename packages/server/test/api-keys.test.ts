import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUp, signUpVerified, type TestAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

let app: TestApp;
let alice: TestAccount;
let bob: TestAccount;
beforeAll(async () => {
  app = await startTestApp();
  [alice, bob] = await Promise.all([signUpVerified(app), signUpVerified(app)]);
});
afterAll(() => app.close());

describe("POST /api/keys", () => {
  it("mints a pk_ key (201) with at least 32 random bytes, stored only as a hash", async () => {
    const response = await request(app.url, "POST", "/api/keys", { cookie: alice.cookie, body: { name: "  ci  " } });
    expect(response.status).toBe(201);
    expect(Object.keys(response.body).sort()).toEqual(["id", "key", "name", "prefix"]);
    const { key, id, prefix, name } = response.body;
    expect(key).toMatch(/^pk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(3), "base64url").length).toBeGreaterThanOrEqual(32);
    expect(id).toMatch(/^key_[0-9a-z]{26}$/);
    expect(prefix).toBe(`${key.slice(0, 15)}...`);
    expect(name).toBe("ci");

    const stored = await app.services.stores.apiKeys.listForUser(alice.userId);
    expect(JSON.stringify(stored)).not.toContain(key);
  });

  it("accepts a bearer key as well as the session cookie", async () => {
    const { key } = await createKey(app.url, alice);
    const response = await request(app.url, "POST", "/api/keys", { key, body: { name: "made with a key" } });
    expect(response.status).toBe(201);
  });

  it.each([
    ["no body", undefined],
    ["no name", {}],
    ["empty name", { name: "" }],
    ["name not a string", { name: 42 }],
  ])("answers 400 without a usable name (%s)", async (_label, body) => {
    const before = await app.services.stores.apiKeys.listForUser(alice.userId);
    const response = await request(app.url, "POST", "/api/keys", {
      cookie: alice.cookie,
      ...(body === undefined ? { headers: { "content-type": "application/json" } } : { body }),
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("invalid_request");
    expect(response.body.message).toContain("name");
    expect(await app.services.stores.apiKeys.listForUser(alice.userId)).toHaveLength(before.length);
  });

  it("answers 403 email_unverified before verification, and creates nothing", async () => {
    const unverified = await signUp(app.url);
    const response = await request(app.url, "POST", "/api/keys", { cookie: unverified.cookie, body: { name: "k" } });
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ code: "email_unverified", message: expect.stringMatching(/verify/i) });
    expect(await app.services.stores.apiKeys.listForUser(unverified.userId)).toEqual([]);
  });
});

describe("POST /api/keys: bad input", () => {
  it("refuses a name over 100 characters saying so, not that it is missing, and creates nothing", async () => {
    const before = await app.services.stores.apiKeys.listForUser(alice.userId);
    const response = await request(app.url, "POST", "/api/keys", { cookie: alice.cookie, body: { name: "x".repeat(101) } });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("invalid_request");
    expect(response.body.message).toMatch(/name: must be at most 100 characters/);
    expect(await app.services.stores.apiKeys.listForUser(alice.userId)).toEqual(before);
  });
});

describe("GET /api/keys", () => {
  it("lists the account's keys newest first, with prefix and never the secret", async () => {
    const account = await signUpVerified(app);
    const first = await createKey(app.url, account, "first");
    const second = await createKey(app.url, account, "second");
    const response = await request(app.url, "GET", "/api/keys", { cookie: account.cookie });
    expect(response.status).toBe(200);
    expect(response.body.keys.map((key: { name: string }) => key.name)).toEqual(["second", "first"]);
    for (const listed of response.body.keys) {
      expect(Object.keys(listed).sort()).toEqual(["createdAt", "id", "lastUsedAt", "name", "prefix"]);
      expect(listed.prefix).toMatch(/^pk_.{12}\.\.\.$/);
      expect(new Date(listed.createdAt).toISOString()).toBe(listed.createdAt);
      expect(listed.lastUsedAt).toBeNull();
    }
    expect(response.text).not.toContain(first.key);
    expect(response.text).not.toContain(second.key);
  });

  it("updates lastUsedAt when the key authenticates a request", async () => {
    const account = await signUpVerified(app);
    const { key, id } = await createKey(app.url, account);
    const before = Date.now();
    const listed = await request(app.url, "GET", "/api/keys", { key });
    const entry = listed.body.keys.find((candidate: { id: string }) => candidate.id === id);
    expect(entry.lastUsedAt).not.toBeNull();
    expect(new Date(entry.lastUsedAt).getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it("does not show another account's keys", async () => {
    const aliceKey = await createKey(app.url, alice, "alice only");
    const response = await request(app.url, "GET", "/api/keys", { cookie: bob.cookie });
    expect(response.status).toBe(200);
    expect(response.body.keys.map((key: { id: string }) => key.id)).not.toContain(aliceKey.id);
  });
});

describe("DELETE /api/keys/{id}", () => {
  it("revokes the key: { ok: true }, gone from the listing, refused (401) on the very next request", async () => {
    const { key, id } = await createKey(app.url, alice);
    expect((await request(app.url, "GET", "/api/webhooks/secret", { key })).status).toBe(200);
    const response = await request(app.url, "DELETE", `/api/keys/${id}`, { cookie: alice.cookie });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true });
    const next = await request(app.url, "GET", "/api/webhooks/secret", { key });
    expect(next.status).toBe(401);
    expect(next.body.code).toBe("unauthorized");
    const listed = await request(app.url, "GET", "/api/keys", { cookie: alice.cookie });
    expect(listed.body.keys.map((entry: { id: string }) => entry.id)).not.toContain(id);
  });

  it("answers 404 for an unknown id", async () => {
    const response = await request(app.url, "DELETE", "/api/keys/key_doesnotexist", { cookie: alice.cookie });
    expect(response.status).toBe(404);
    expect(response.body.code).toBe("not_found");
  });

  it("answers 404 for another account's key and leaves it working", async () => {
    const { key, id } = await createKey(app.url, alice);
    const response = await request(app.url, "DELETE", `/api/keys/${id}`, { cookie: bob.cookie });
    expect(response.status).toBe(404);
    expect((await request(app.url, "GET", "/api/keys", { key })).status).toBe(200);
  });
});

describe("GET /api/webhooks/secret", () => {
  it("returns one hex secret (>= 32 bytes) per account, stable across calls, different between accounts", async () => {
    const aliceKey = await createKey(app.url, alice);
    const bobKey = await createKey(app.url, bob);
    const first = await request(app.url, "GET", "/api/webhooks/secret", { key: aliceKey.key });
    const second = await request(app.url, "GET", "/api/webhooks/secret", { key: aliceKey.key });
    const other = await request(app.url, "GET", "/api/webhooks/secret", { key: bobKey.key });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      secret: expect.stringMatching(/^[0-9a-f]{64,}$/),
      standard_webhooks_secret: expect.stringMatching(/^whsec_/),
    });
    expect(Buffer.from(first.body.standard_webhooks_secret.slice(6), "base64").toString("hex")).toBe(first.body.secret);
    expect(second.body.secret).toBe(first.body.secret);
    expect(other.body.secret).not.toBe(first.body.secret);
  });

  it("requires a bearer key (a session cookie is not enough)", async () => {
    const response = await request(app.url, "GET", "/api/webhooks/secret", { cookie: alice.cookie });
    expect(response.status).toBe(401);
  });
});
