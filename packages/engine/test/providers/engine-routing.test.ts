import { readFile } from "node:fs/promises";
import { HttpResponse, http } from "msw";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { createImageEngine } from "../../src/workflows/engine";
import { answerPng, failureOf, mswServer } from "./provider-contract";

/**
 * Which prompts the engine hands to a configured provider: those the
 * built-in catalog does not fully understand, and removals of targets the
 * detector does not know. Catalog prompts never leave the engine.
 */
const BASE = "http://gpu-box.internal:8000/v1";
const EDITS = `${BASE}/images/edits`;
const server = mswServer();

function countingServer(): { prompts: string[]; masks: number } {
  const seen = { prompts: [] as string[], masks: 0 };
  server.use(
    http.post(EDITS, async ({ request }) => {
      const form = await request.formData();
      seen.prompts.push(String(form.get("prompt")));
      if (form.get("mask")) seen.masks++;
      return HttpResponse.json({ created: 1, data: [{ b64_json: (await answerPng(1024, 1024)).toString("base64") }] });
    }),
  );
  return seen;
}

const engine = () =>
  createImageEngine({ generativeProvider: { provider: "openai-compatible", baseUrl: BASE, model: "local-edit", maxRetries: 0 } });
const photo = () => readFile(new URL("../fixtures/dog.jpg", import.meta.url));

describe("routing to the hosted provider", () => {
  it("a prompt the catalog does not understand goes to the provider, recorded on the result, at the input's size", async () => {
    const seen = countingServer();
    const input = await photo();
    const { width, height } = await sharp(input).metadata();
    const result = await engine().edit({ image: input, prompt: "make it a watercolour painting", format: "png" });
    expect(seen.prompts).toEqual(["make it a watercolour painting"]);
    expect(result).toMatchObject({ workflow: "generative_edit", format: "png", width, height });
    expect(result.provider).toMatchObject({ name: "openai-compatible", model: "local-edit" });
    expect(result.provider?.latencyMs).toEqual(expect.any(Number));
  });

  it("catalog instructions never reach it", async () => {
    const seen = countingServer();
    const result = await engine().edit({ image: await photo(), prompt: "make it black and white and add a white border" });
    expect(seen.prompts).toEqual([]);
    expect(result.provider).toBeUndefined();
  });

  it("removing something the detector does not know goes to it; with a mask the built-in remover fills it", async () => {
    const seen = countingServer();
    const input = await photo();
    const { width = 0, height = 0 } = await sharp(input).metadata();
    const mask = await sharp({ create: { width, height, channels: 3, background: "black" } })
      .composite([{ input: { create: { width: 40, height: 30, channels: 3, background: "white" } }, left: 10, top: 10 }])
      .png()
      .toBuffer();
    const unmasked = await engine().edit({ image: input, prompt: "remove the watermark" });
    expect(unmasked.provider?.name).toBe("openai-compatible");
    expect(unmasked.workflow).toBe("object_removal");
    // With a mask the built-in remover fills it itself: detection is skipped, nothing is "not detectable".
    const masked = await engine().edit({ image: input, prompt: "remove the watermark", mask });
    expect(masked.provider).toBeUndefined();
    expect(seen.prompts).toEqual(["remove the watermark"]);
    expect(seen.masks).toBe(0);
  });

  it("without a provider the same prompt is refused as before", async () => {
    const error = await failureOf(createImageEngine().edit({ image: await photo(), prompt: "make it a watercolour painting" }));
    expect(error.reason).toBe("unsupported_instruction");
  });

  it("the provider's failure is the edit's failure (upstream_failed)", async () => {
    server.use(http.post(EDITS, () => HttpResponse.json({ error: { message: "boom" } }, { status: 500 })));
    const error = await failureOf(engine().edit({ image: await photo(), prompt: "make it a watercolour painting" }));
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain("OpenAI-compatible server");
  });
});
