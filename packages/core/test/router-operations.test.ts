import { describe, expect, it } from "vitest";
import { z } from "zod";
import { appRouter } from "../src/trpc/router";
import { routerOperations } from "../src/trpc/router-operations";

/** The router's procedures found the public way: walking the nested record it was written as. */
function nestedPaths(record: Record<string, unknown>, prefix = ""): string[] {
  return Object.entries(record).flatMap(([key, value]) => {
    const path = `${prefix}${key}`;
    const isProcedure = typeof value === "function" && "_def" in value;
    return isProcedure ? [path] : nestedPaths(value as Record<string, unknown>, `${path}.`);
  });
}

describe("routerOperations", () => {
  it("lists every procedure of the router once, by its dotted path", () => {
    const paths = routerOperations().map((operation) => operation.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect([...paths].sort()).toEqual(nestedPaths(appRouter._def.record as Record<string, unknown>).sort());
  });

  it("gives each procedure's metadata, type and zod schemas", () => {
    const submit = routerOperations().find((operation) => operation.path === "process.submit");
    expect(submit?.type).toBe("mutation");
    expect(submit?.meta.openapi).toMatchObject({ method: "POST", path: "/api/process" });
    expect(submit?.meta.errors).toContain("insufficient_credits");
    expect(submit?.inputs[0]).toBeInstanceOf(z.ZodType);
    expect(submit?.output).toBeInstanceOf(z.ZodType);
    expect(routerOperations().find((operation) => operation.path === "keys.list")?.type).toBe("query");
    // A procedure without metadata of its own still carries what its builder set (who may call it).
    for (const operation of routerOperations()) expect(operation.meta.auth, operation.path).toBeDefined();
  });

  it("is read once: the same list every time", () => {
    expect(routerOperations()).toBe(routerOperations());
  });
});
