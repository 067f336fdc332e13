import { ERROR_CODES } from "@retouch/core";
import { describe, expect, it } from "vitest";
import { REFUSAL_MESSAGES } from "../src/api/refusal-messages";

/**
 * The dashboard's words for the service's refusals (issue 25): every error
 * code the service can answer has one, short and for a person. A new code in
 * packages/core/src/errors/error-codes.ts fails here until it has its text in
 * packages/web/src/api/refusal-messages.ts.
 */
describe("the refusal texts", () => {
  it("cover every error code the service has, and nothing else", () => {
    expect(Object.keys(REFUSAL_MESSAGES).sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it.each(Object.entries(REFUSAL_MESSAGES))(
    "says %s in one or two short sentences, with nothing for a program",
    (_code, text) => {
      const sentences = text.split(/[.!?](?:\s|$)/).filter((sentence) => sentence.trim());
      expect(sentences.length).toBeGreaterThanOrEqual(1);
      expect(sentences.length).toBeLessThanOrEqual(2);
      expect(text.length).toBeLessThan(160);
      // No endpoints, headers, field names or Markdown: the service's own messages keep those, for API clients.
      expect(text).not.toMatch(/`|\/api|\bGET\b|\bPOST\b|Authorization|Bearer|Retry-After|Idempotency-Key|image_url|_/);
    },
  );
});
