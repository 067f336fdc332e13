import { describe, expect, it } from "vitest";
import { CircuitBreaker, parseRetryAfter, redact, retryAfterOf, safeCode } from "../../src/providers/upstream-call";

describe("the circuit breaker", () => {
  it("opens after the threshold, fails calls during the cool-down, then lets exactly one through", () => {
    const breaker = new CircuitBreaker(3, 1_000);
    breaker.failed(0);
    breaker.failed(0);
    expect(breaker.tryAcquire(10)).toBe(true);
    breaker.failed(10);
    expect(breaker.isOpen).toBe(true);
    expect(breaker.tryAcquire(500)).toBe(false);
    expect(breaker.remainingMs(500)).toBe(510);
    // Half-open: one trial call, no second one while it runs.
    expect(breaker.tryAcquire(1_100)).toBe(true);
    expect(breaker.tryAcquire(1_100)).toBe(false);
    breaker.succeeded();
    expect(breaker.isOpen).toBe(false);
    expect(breaker.tryAcquire(1_200)).toBe(true);
  });

  it("a failed trial opens it again for a whole cool-down; a success in between resets the count", () => {
    const breaker = new CircuitBreaker(2, 1_000);
    breaker.failed(0);
    breaker.succeeded();
    breaker.failed(0);
    expect(breaker.isOpen).toBe(false);
    breaker.failed(0);
    expect(breaker.tryAcquire(1_000)).toBe(true);
    breaker.failed(1_000);
    expect(breaker.tryAcquire(1_500)).toBe(false);
    expect(breaker.tryAcquire(2_000)).toBe(true);
  });

  it("a trial that tells nothing (a refusal, a cancel) lets the next call be the trial", () => {
    const breaker = new CircuitBreaker(1, 100);
    breaker.failed(0);
    expect(breaker.tryAcquire(100)).toBe(true);
    breaker.released();
    expect(breaker.tryAcquire(100)).toBe(true);
  });
});

describe("Retry-After", () => {
  it("reads seconds, an HTTP date, and OpenAI's retry-after-ms", () => {
    expect(parseRetryAfter("2")).toBe(2_000);
    expect(parseRetryAfter("Sun, 23 Nov 2026 08:00:05 GMT", Date.parse("Sun, 23 Nov 2026 08:00:00 GMT"))).toBe(5_000);
    expect(parseRetryAfter("soon")).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(retryAfterOf(new Headers({ "retry-after": "20", "retry-after-ms": "1500" }))).toBe(1_500);
    expect(retryAfterOf(new Headers({ "retry-after": "3" }))).toBe(3_000);
  });
});

describe("redaction", () => {
  it("removes the configured key and anything key-like, and keeps ordinary words", () => {
    const text =
      "key abc-configured-secret, Bearer eyJhbGciOi.x.y, sk-proj-AbC123dEf456, r8_Zx91kLmN0pQ, AIzaSyD-1234567890abcdefgh, tok 4f9d2c7e1b8a6035d9e4c1f7a2b3c4d5";
    const out = redact(text, ["abc-configured-secret"]);
    for (const secret of ["abc-configured-secret", "eyJhbGciOi", "sk-proj", "r8_Zx91", "AIzaSy", "4f9d2c7e1b8a"]) {
      expect(out).not.toContain(secret);
    }
    const sentence = "The image provider (OpenAI-compatible server) failed (HTTP 503, code server_error, tried 3 times).";
    expect(redact(sentence)).toBe(sentence);
  });

  it("passes only plain identifiers as vendor codes", () => {
    expect(safeCode("moderation_blocked")).toBe("moderation_blocked");
    expect(safeCode("E005")).toBe("E005");
    expect(safeCode("Your request was rejected")).toBeUndefined();
    expect(safeCode(42)).toBeUndefined();
  });
});
