import { routerOperations } from "@retouch/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUpVerified } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The same authentication checks against every protected REST route, taken
 * from the router itself: a route added later is covered without editing this file.
 */
const protectedRoutes = routerOperations().flatMap(({ meta }) => {
  const openapi = meta.openapi;
  return openapi && openapi.protect !== false ? [{ method: openapi.method, path: openapi.path.replace("{id}", "key_x") }] : [];
});

let app: TestApp;
let revokedKey: string;
beforeAll(async () => {
  app = await startTestApp();
  const account = await signUpVerified(app);
  const created = await createKey(app.url, account);
  revokedKey = created.key;
  await request(app.url, "DELETE", `/api/keys/${created.id}`, { cookie: account.cookie });
});
afterAll(() => app.close());

describe.each(protectedRoutes)("$method $path", ({ method, path }) => {
  const body = method === "GET" || method === "DELETE" ? undefined : {};
  const cases: Array<[string, Record<string, string>]> = [
    ["no credentials", {}],
    ["a malformed bearer", { authorization: "Bearer not-a-key" }],
    ["an unknown pk_ key", { authorization: `Bearer pk_${"A".repeat(43)}` }],
    ["a non-bearer scheme", { authorization: "Basic dXNlcjpwYXNz" }],
    ["a bogus session cookie", { cookie: "retouch.session_token=forged.signature" }],
  ];
  it.each(cases)("answers 401 with %s", async (_label, headers) => {
    const response = await request(app.url, method, path, { headers, ...(body ? { body } : {}) });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ code: "unauthorized", message: expect.any(String) });
  });

  it("answers 401 with a revoked key", async () => {
    const response = await request(app.url, method, path, { key: revokedKey, ...(body ? { body } : {}) });
    expect(response.status).toBe(401);
  });
});

it("covers every protected operation of the router", () => {
  expect(protectedRoutes.map((route) => `${route.method} ${route.path}`).sort()).toEqual(
    expect.arrayContaining(["DELETE /api/keys/key_x", "GET /api/keys", "GET /api/webhooks/secret", "POST /api/keys"]),
  );
});
