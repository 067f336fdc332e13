import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { OUTPUT_FORMATS as ENGINE_OUTPUT_FORMATS, outputFormatFor as enginesOutputFormatFor } from "../../engine/src/index";
import { generateProcessItem, PROCESS_ITEM_FILE } from "../scripts/process-item";
import { FIXED_OUTPUT_FORMATS, OUTPUT_FORMATS, outputFormatFor, PROCESS_ITEM_FIELDS } from "../src/index";
import { toWireItem } from "../src/process-item";

/**
 * The SDK's copy of the service's lists (process-item.generated.ts) is read
 * from their owners, and the one mapping of an item to the wire carries every
 * field of the schema.
 */
describe("the process item, from the router's owner", () => {
  it("the generated fields and formats match core's schema and the engine (run `pnpm --filter @retouch/sdk generate` if not)", async () => {
    expect(generateProcessItem()).toBe(await readFile(PROCESS_ITEM_FILE, "utf8"));
  }, 60_000);

  it("maps every option field of the schema to the wire, by its camelCased name, and nothing else", async () => {
    const options = Object.keys(PROCESS_ITEM_FIELDS).filter(
      (name) => !["image", "image_url", "mask", "mask_url", "prompt"].includes(name),
    );
    expect(options.length).toBeGreaterThan(0);
    const item: Record<string, unknown> = { image: new Uint8Array([1, 2, 3]), prompt: "make it sepia" };
    for (const name of options)
      item[name.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase())] = `value of ${name}`;
    // Not item fields: a call's own options ride along in the SDK and must stay behind.
    Object.assign(item, { idempotencyKey: "k", intervalMs: 10, signal: new AbortController().signal, stream: false });
    const wire = await toWireItem(item as never, fetch);
    expect(wire).toEqual({
      image: "AQID",
      prompt: "make it sepia",
      ...Object.fromEntries(options.map((name) => [name, `value of ${name}`])),
    });
  });

  it("sends http(s) pictures as URLs and others as base64; undefined options are left out", async () => {
    expect(
      await toWireItem(
        { image: "https://example.com/a.jpg", prompt: "p", mask: "https://example.com/m.png", quality: undefined },
        fetch,
      ),
    ).toEqual({ image_url: "https://example.com/a.jpg", prompt: "p", mask_url: "https://example.com/m.png" });
    expect(await toWireItem({ image: new Uint8Array([1]), prompt: "p", mask: new Uint8Array([2]) }, fetch)).toEqual({
      image: "AQ==",
      prompt: "p",
      mask: "Ag==",
    });
  });

  it("says what an edit is written in as the engine does, for every workflow and asked format", () => {
    expect(OUTPUT_FORMATS).toEqual(ENGINE_OUTPUT_FORMATS);
    expect(FIXED_OUTPUT_FORMATS).toEqual({ background_removal: "png" });
    for (const workflow of ["background_removal", "object_removal", "generative_edit"] as const) {
      for (const format of [undefined, ...OUTPUT_FORMATS]) {
        expect(outputFormatFor(workflow, format), `${workflow} ${format}`).toBe(enginesOutputFormatFor(workflow, format));
      }
    }
  });
});
