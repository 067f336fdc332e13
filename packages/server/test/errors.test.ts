import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUpVerified, type TestAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

let app: TestApp;
let account: TestAccount;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  account = await signUpVerified(app);
  key = (await createKey(app.url, account)).key;
});
afterAll(() => app.close());

describe("one error shape", () => {
  it("answers malformed JSON with 400 invalid_json", async () => {
    const response = await request(app.url, "POST", "/api/keys", {
      key,
      rawBody: '{"name": "unterminated',
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ code: "invalid_json", message: expect.stringMatching(/not valid JSON/) });
  });

  it("answers an oversized body with 413 before reading it all", async () => {
    const response = await request(app.url, "POST", "/api/keys", {
      key,
      rawBody: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) }),
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(413);
    expect(response.body.code).toBe("payload_too_large");
  });

  it("answers a non-JSON body with 415", async () => {
    const response = await request(app.url, "POST", "/api/keys", {
      key,
      rawBody: "name=x",
      headers: { "content-type": "text/plain" },
    });
    expect(response.status).toBe(415);
    expect(response.body.code).toBe("unsupported_media_type");
  });

  it("answers an unknown route with 404 not_found", async () => {
    const response = await request(app.url, "GET", "/api/nothing-here", { key });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ code: "not_found", message: expect.any(String) });
  });

  it("applies the same limits and codes on /trpc", async () => {
    const malformed = await request(app.url, "POST", "/trpc/keys.create", {
      key,
      rawBody: "{oops",
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.data.code).toBe("invalid_json");
    const unverified = await request(app.url, "POST", "/trpc/keys.create", { body: { name: "x" } });
    expect(unverified.status).toBe(401);
    expect(unverified.body.error.data.code).toBe("unauthorized");
    expect(unverified.text).not.toMatch(/stack/);
  });

  it("hides internal errors: a generic 500, details only in the logs", async () => {
    const client = new pg.Client({ connectionString: app.config.databaseUrl });
    await client.connect();
    await client.query("alter table api_keys rename column prefix to prefix_gone");
    try {
      const response = await request(app.url, "GET", "/api/keys", { cookie: account.cookie });
      expect(response.status).toBe(500);
      expect(response.body).toEqual({ code: "internal_error", message: "Something went wrong on our side. Please retry later." });
      expect(response.text).not.toMatch(/prefix|column|select|api_keys|at .*\.ts/i);
      expect(app.logs.some((line) => line.includes('"level":50') && line.includes("prefix"))).toBe(true);
    } finally {
      await client.query("alter table api_keys rename column prefix_gone to prefix");
      await client.end();
    }
  });
});

describe("secrets stay out of logs and listings", () => {
  it("never writes a key, password, session token or webhook secret to a log line", async () => {
    const fresh = await signUpVerified(app);
    const created = await createKey(app.url, fresh, "log check");
    await request(app.url, "GET", "/api/keys", { key: created.key });
    const secret = (await request(app.url, "GET", "/api/webhooks/secret", { key: created.key })).body.secret as string;
    await request(app.url, "GET", "/api/keys", { key: `${created.key.slice(0, -2)}zz` });
    const logs = app.logs.join("\n");
    expect(logs).toContain("/api/keys");
    for (const value of [created.key, fresh.password, fresh.token, fresh.cookie.split("=")[1] as string, secret]) {
      expect(logs).not.toContain(value);
    }
  });
});
