import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { base64DecodedLength, decodeBase64Strict } from "../src/lib/base64";

describe("decodeBase64Strict", () => {
  it("decodes both alphabets, with or without padding, for every tail length", () => {
    for (let length = 1; length <= 40; length++) {
      const bytes = randomBytes(length);
      for (const text of [
        bytes.toString("base64"),
        bytes.toString("base64").replace(/=+$/, ""),
        bytes.toString("base64url"),
        `${bytes.toString("base64url")}${"=".repeat((4 - (bytes.toString("base64url").length % 4)) % 4)}`,
      ]) {
        expect(decodeBase64Strict(text), text).toEqual(bytes);
        expect(base64DecodedLength(text)).toBe(length);
      }
    }
  });

  it.each([
    ["a character outside both alphabets", "QUJD$QUJD"],
    ["a space", "QUJD QUJD"],
    ["a line break (MIME-wrapped output)", "QUJD\nQUJD"],
    ["a non-ASCII letter", "QUJDéQUJD"],
    ["padding in the middle", "QUI=QUJD"],
    ["three padding characters", "QQ==="],
    ["partial padding", "QQ="],
    ["a lone character in the last group", "QUJDQ"],
    ["padding alone", "=="],
  ])("refuses %s", (_label, text) => {
    expect(decodeBase64Strict(text)).toBeUndefined();
  });

  it("handles tens of megabytes (no regular expression, no stack overflow)", () => {
    const bytes = randomBytes(25 * 1024 * 1024);
    const text = bytes.toString("base64");
    expect(text.length).toBeGreaterThan(34_000_000);
    expect(decodeBase64Strict(text)?.equals(bytes)).toBe(true);
    // One bad character anywhere is found, at the end as well as in the middle.
    expect(decodeBase64Strict(`${text.slice(0, 17_000_000)}!${text.slice(17_000_001)}`)).toBeUndefined();
    expect(decodeBase64Strict(`${text.slice(0, -5)}*${text.slice(-4)}`)).toBeUndefined();
  });
});
