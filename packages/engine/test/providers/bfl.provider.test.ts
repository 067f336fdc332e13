import { HttpResponse, http } from "msw";
import { describe, expect, it } from "vitest";
import { createGenerativeProvider } from "../../src/providers/generative-providers";
import { answerPng, failureOf, KEY, mswServer, photo, pngInfo, providerContract, TUNING, VENDOR_TEXT } from "./provider-contract";

/**
 * BFL's FLUX.1 Kontext as BFL's API reference documents it: `POST
 * /v1/flux-kontext-pro` with `x-key` and JSON (prompt, input_image as
 * base64, aspect_ratio, output_format), `{ id, polling_url }` back; the
 * polling URL answers `{ status: "Pending" }` until `{ status: "Ready",
 * result: { sample } }`, the sample being a signed link on BFL's delivery
 * storage; "Content Moderated" / "Request Moderated" are refusals; 422 for
 * validation errors (`{ detail: [...] }`).
 */
const SUBMIT = "https://api.bfl.ai/v1/flux-kontext-pro";
const POLL = "https://api.eu.bfl.ai/v1/get_result";
const SAMPLE = "https://bfldeliveryprod.blob.core.windows.net/results/2026/11/23/sample.png";
const server = mswServer();

function submitted() {
  return http.post(SUBMIT, () => HttpResponse.json({ id: "task-1", polling_url: `${POLL}?id=task-1` }));
}

function polls(...answers: object[]) {
  let index = 0;
  return http.get(POLL, () => HttpResponse.json(answers[Math.min(index++, answers.length - 1)]));
}

function sample(answer: Buffer) {
  return http.get(SAMPLE, () =>
    HttpResponse.arrayBuffer(new Uint8Array(answer).buffer, { headers: { "content-type": "image/png" } }),
  );
}

describe("Black Forest Labs", () => {
  providerContract(server, {
    options: { provider: "bfl" },
    vendor: "Black Forest Labs",
    submitUrl: SUBMIT,
    success: (answer) => [
      submitted(),
      polls({ id: "task-1", status: "Pending" }, { id: "task-1", status: "Ready", result: { sample: SAMPLE } }),
      sample(answer),
    ],
    refusal: () => [submitted(), polls({ id: "task-1", status: "Content Moderated", details: VENDOR_TEXT })],
    errorBody: (status) => ({ detail: `${VENDOR_TEXT} x-key ${KEY}`, status }),
  });

  it("submits the documented JSON with x-key, polls with it, and downloads the sample without it", async () => {
    const seen: {
      submit?: Record<string, unknown>;
      submitKey?: string | null;
      pollKey?: string | null;
      sampleKey?: string | null;
    } = {};
    server.use(
      http.post(SUBMIT, async ({ request }) => {
        seen.submitKey = request.headers.get("x-key");
        seen.submit = (await request.json()) as Record<string, unknown>;
        return HttpResponse.json({ id: "task-1", polling_url: `${POLL}?id=task-1` });
      }),
      http.get(POLL, ({ request }) => {
        seen.pollKey = request.headers.get("x-key");
        return HttpResponse.json({ id: "task-1", status: "Ready", result: { sample: SAMPLE } });
      }),
      http.get(SAMPLE, async ({ request }) => {
        seen.sampleKey = request.headers.get("x-key");
        return HttpResponse.arrayBuffer(new Uint8Array(await answerPng(1248, 832)).buffer);
      }),
    );
    const edit = await createGenerativeProvider({ provider: "bfl", apiKey: KEY }, TUNING).edit(
      { image: await photo(), prompt: "make it night", negativePrompt: "street lights", maxPixels: 40_000_000 },
      {},
    );
    expect(seen.submitKey).toBe(KEY);
    expect(seen.pollKey).toBe(KEY);
    expect(seen.sampleKey).toBeNull();
    expect(seen.submit).toMatchObject({
      prompt: "make it night. Avoid: street lights.",
      aspect_ratio: "3:2",
      output_format: "png",
    });
    const input = Buffer.from(String(seen.submit?.input_image), "base64");
    expect(await pngInfo(input)).toMatchObject({ format: "jpeg" });
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("a generation that ends in Error is retried as a new submission", async () => {
    let submissions = 0;
    let polled = 0;
    server.use(
      http.post(SUBMIT, () => {
        submissions++;
        return HttpResponse.json({ id: `task-${submissions}`, polling_url: `${POLL}?id=task-${submissions}` });
      }),
      http.get(POLL, () => {
        polled++;
        return HttpResponse.json(
          polled === 1 ? { status: "Error", details: VENDOR_TEXT } : { status: "Ready", result: { sample: SAMPLE } },
        );
      }),
      sample(await answerPng(1024, 1024)),
    );
    const edit = await createGenerativeProvider({ provider: "bfl", apiKey: KEY }, TUNING).edit(
      { image: await photo(), prompt: "make it night", maxPixels: 40_000_000 },
      {},
    );
    expect(submissions).toBe(2);
    expect(edit.image.width).toBe(320);
  });

  it("a request refused before generation (Request Moderated) is content_refused", async () => {
    server.use(submitted(), polls({ status: "Request Moderated" }));
    const error = await failureOf(
      createGenerativeProvider({ provider: "bfl", apiKey: KEY }, TUNING).edit(
        { image: await photo(), prompt: "make it night", maxPixels: 40_000_000 },
        {},
      ),
    );
    expect(error.reason).toBe("content_refused");
  });
});
