import { routerOperations } from "@retouch/core";
import { describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "../src/discovery/openapi";

/**
 * What an operation documents is declared in its own procedure's meta and
 * generated from there: no table in the document's builder names an operation.
 */
const document = buildOpenApiDocument({ publicBaseUrl: "https://retouch.test.example" }) as unknown as {
  paths: Record<string, Record<string, { parameters?: Array<Record<string, unknown>>; responses: Record<string, any> }>>;
};
const restOperations = routerOperations().flatMap(({ path, meta }) =>
  meta.openapi ? [{ path, meta, operation: document.paths[meta.openapi.path]?.[meta.openapi.method.toLowerCase()] }] : [],
);

describe("the OpenAPI document from each procedure's meta", () => {
  it("documents Set-Cookie on exactly the operations whose meta says they set the session cookie", () => {
    const declared = restOperations.filter(({ meta }) => meta.setCookie).map(({ path }) => path);
    expect(declared.sort()).toEqual(["auth.session", "auth.signIn", "auth.signOut", "auth.signUp"]);
    for (const { path, meta, operation } of restOperations) {
      const header = operation?.responses["200"]?.headers?.["Set-Cookie"];
      expect(header?.description, path).toBe(meta.setCookie);
    }
  });

  it("documents the request headers an operation's meta declares as header parameters", () => {
    const submit = restOperations.find(({ path }) => path === "process.submit");
    expect(Object.keys(submit?.meta.openapi?.requestHeaders?.shape ?? {})).toEqual(["Idempotency-Key"]);
    for (const { path, meta, operation } of restOperations) {
      const declared = Object.keys(meta.openapi?.requestHeaders?.shape ?? {});
      const documented = (operation?.parameters ?? []).filter((parameter) => parameter.in === "header").map((p) => p.name);
      expect(documented, path).toEqual(declared);
    }
  });
});
