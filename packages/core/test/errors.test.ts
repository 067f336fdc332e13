import { TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ERROR_CODES } from "../src/errors/error-codes";
import { RetouchError } from "../src/errors/retouch-error";
import { toRetouchError } from "../src/trpc/errors";

describe("the error table", () => {
  it("gives every code a client-error or server-error status and a message", () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(entry.status, code).toBeGreaterThanOrEqual(400);
      expect(entry.status, code).toBeLessThan(600);
      expect(entry.message.length, code).toBeGreaterThan(10);
    }
  });

  it("keeps the spec's codes and statuses", () => {
    expect(ERROR_CODES.email_unverified.status).toBe(403);
    expect(ERROR_CODES.batch_exceeds_plan_limit.status).toBe(400);
    expect(ERROR_CODES.rate_limited.status).toBe(429);
    expect(ERROR_CODES.too_many_in_flight.status).toBe(429);
    expect(ERROR_CODES.idempotency_key_reused.status).toBe(422);
  });
});

describe("toRetouchError", () => {
  it("keeps a domain error, with Retry-After", () => {
    const error = new RetouchError("rate_limited", undefined, { retryAfterSeconds: 12 });
    const mapped = toRetouchError(new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: error }));
    expect(mapped).toBe(error);
    expect(mapped.headers()).toEqual({ "Retry-After": "12" });
  });

  it("turns input validation into invalid_request naming the fields", () => {
    const parsed = z.object({ name: z.string() }).safeParse({});
    const mapped = toRetouchError(new TRPCError({ code: "BAD_REQUEST", cause: parsed.error }));
    expect(mapped.code).toBe("invalid_request");
    expect(mapped.message).toContain("name");
    expect(mapped.issues?.[0]?.path).toBe("name");
  });

  it.each(["EMFILE", "ENFILE"])("answers %s (out of file descriptors) 503 with Retry-After, however wrapped", (code) => {
    const exhausted = Object.assign(new Error(`connect ${code}: too many open files`), { code, syscall: "socket" });
    for (const thrown of [
      exhausted,
      new Error("could not open the blob", { cause: exhausted }),
      new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: exhausted }),
    ]) {
      const mapped = toRetouchError(thrown);
      expect(mapped.status).toBe(503);
      expect(mapped.code).toBe("service_unavailable");
      expect(Number(mapped.headers()["Retry-After"])).toBeGreaterThan(0);
      expect(mapped.message).not.toContain("too many open files");
    }
  });

  it("never passes an internal message through", () => {
    const mapped = toRetouchError(new Error('relation "api_keys" does not exist'));
    expect(mapped.toBody()).toEqual({ code: "internal_error", message: ERROR_CODES.internal_error.message });
  });
});
