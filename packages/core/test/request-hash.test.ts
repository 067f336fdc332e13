import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ProcessInput } from "../src/schemas/process.schemas";
import { requestHash } from "../src/services/submissions.service";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("requestHash (what an Idempotency-Key is bound to)", () => {
  it("does not change with the order of the request's keys, at any depth", () => {
    const one = { prompt: "remove the background", format: "png", quality: 80 } as ProcessInput;
    const other = { quality: 80, format: "png", prompt: "remove the background" } as ProcessInput;
    expect(requestHash(one)).toBe(requestHash(other));
    const batch = {
      images: [
        { prompt: "p", image: "aGk=" },
        { image_url: "https://a.test/x.png", prompt: "q" },
      ],
    };
    const reordered = {
      images: [
        { image: "aGk=", prompt: "p" },
        { prompt: "q", image_url: "https://a.test/x.png" },
      ],
    };
    expect(requestHash(batch as ProcessInput)).toBe(requestHash(reordered as ProcessInput));
  });

  it("keeps an array's order: two images in another order are another request", () => {
    const first = { images: [{ prompt: "a" }, { prompt: "b" }] } as ProcessInput;
    const second = { images: [{ prompt: "b" }, { prompt: "a" }] } as ProcessInput;
    expect(requestHash(first)).not.toBe(requestHash(second));
  });

  it("is the hash stored with keys before the stable-JSON library: keys sorted by localeCompare, undefined left out", () => {
    // Batch items are not validated before hashing, so their keys are whatever the client sent: "alpha" sorts
    // before "Zeta" under localeCompare, after it in code-unit order (a library's default). A different canonical
    // form would refuse a retry across an upgrade as a reused Idempotency-Key.
    const input = { images: [{ Zeta: 1, alpha: [2, { b: null, A: "x" }], skipped: undefined }], prompt: undefined };
    expect(requestHash(input as unknown as ProcessInput)).toBe(sha256('{"images":[{"alpha":[2,{"A":"x","b":null}],"Zeta":1}]}'));
  });
});
