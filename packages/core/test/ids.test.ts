import { describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids";
import { constantTimeEqual } from "../src/lib/secrets";

describe("newId", () => {
  it("prefixes the type and carries 128 random bits", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newId("job")));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^job_[0-9a-hjkmnp-tv-z]{26}$/);
  });
});

describe("constantTimeEqual", () => {
  it("compares by value", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
  });
});
