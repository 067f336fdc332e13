import { HttpResponse, http } from "msw";
import { describe, expect, it } from "vitest";
import { createGenerativeProvider } from "../../src/providers/generative-providers";
import { answerPng, failureOf, KEY, mswServer, photo, pngInfo, providerContract, TUNING, VENDOR_TEXT } from "./provider-contract";

/**
 * Gemini's `POST /v1beta/models/{model}:generateContent` as the Gemini API
 * documents it: the key in `x-goog-api-key`, the picture as `inlineData` and
 * the instruction as text, `generationConfig.responseModalities` and
 * `imageConfig.aspectRatio`; the image back as an `inlineData` part; a
 * blocked prompt as `promptFeedback.blockReason`, a blocked answer as the
 * candidate's `finishReason`; errors as `{ error: { code, message, status } }`.
 */
const GENERATE = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3.1-flash-image:generateContent";
const server = mswServer();

const imageAnswer = (answer: Buffer) =>
  http.post(GENERATE, () =>
    HttpResponse.json({
      candidates: [
        {
          content: { role: "model", parts: [{ inlineData: { mimeType: "image/png", data: answer.toString("base64") } }] },
          finishReason: "STOP",
        },
      ],
      modelVersion: "gemini-3.1-flash-image",
    }),
  );

const STATUS_NAMES: Record<number, string> = {
  401: "UNAUTHENTICATED",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
};

describe("Gemini", () => {
  providerContract(server, {
    options: { provider: "gemini" },
    vendor: "Google Gemini",
    submitUrl: GENERATE,
    success: (answer) => [imageAnswer(answer)],
    refusal: () => [
      http.post(GENERATE, () =>
        HttpResponse.json({
          promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
          usageMetadata: { promptTokenCount: 1290, totalTokenCount: 1290 },
        }),
      ),
    ],
    errorBody: (status) => ({
      error: { code: status, message: `${VENDOR_TEXT} key=${KEY}`, status: STATUS_NAMES[status] ?? "INVALID_ARGUMENT" },
    }),
  });

  it("sends the documented request: key header, the picture inline, the prompt with the negative prompt, the nearest aspect ratio (3:2 for 16:10)", async () => {
    let key: string | null = null;
    let seen: Record<string, unknown> | undefined;
    server.use(
      http.post(GENERATE, async ({ request }) => {
        key = request.headers.get("x-goog-api-key");
        seen = (await request.json()) as Record<string, unknown>;
        return HttpResponse.json({
          candidates: [
            {
              content: {
                parts: [
                  { text: "Here is the edited picture." },
                  { inlineData: { mimeType: "image/png", data: (await answerPng(1248, 832)).toString("base64") } },
                ],
              },
              finishReason: "STOP",
            },
          ],
        });
      }),
    );
    const edit = await createGenerativeProvider({ provider: "gemini", apiKey: KEY }, TUNING).edit(
      { image: await photo(), prompt: "add snow on the ground", negativePrompt: "people", maxPixels: 40_000_000 },
      {},
    );
    const body = seen;
    expect(key).toBe(KEY);
    const contents = body?.contents as { parts: { inlineData?: { mimeType: string; data: string }; text?: string }[] }[];
    const [imagePart, textPart] = contents[0]?.parts ?? [];
    expect(imagePart?.inlineData?.mimeType).toBe("image/jpeg");
    expect(await pngInfo(Buffer.from(imagePart?.inlineData?.data ?? "", "base64"))).toMatchObject({ format: "jpeg" });
    expect(textPart?.text).toBe("add snow on the ground. Avoid: people.");
    expect(body?.generationConfig).toMatchObject({ responseModalities: ["IMAGE"], imageConfig: { aspectRatio: "3:2" } });
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("an answer blocked by the image safety filter is content_refused", async () => {
    server.use(
      http.post(GENERATE, () => HttpResponse.json({ candidates: [{ content: { parts: [] }, finishReason: "IMAGE_SAFETY" }] })),
    );
    const error = await failureOf(
      createGenerativeProvider({ provider: "gemini", apiKey: KEY }, TUNING).edit(
        { image: await photo(), prompt: "add snow", maxPixels: 40_000_000 },
        {},
      ),
    );
    expect(error.reason).toBe("content_refused");
  });

  it("an answer in words only is upstream_failed, and says so without the words", async () => {
    server.use(
      http.post(GENERATE, () =>
        HttpResponse.json({ candidates: [{ content: { parts: [{ text: VENDOR_TEXT }] }, finishReason: "STOP" }] }),
      ),
    );
    const error = await failureOf(
      createGenerativeProvider({ provider: "gemini", apiKey: KEY }, TUNING).edit(
        { image: await photo(), prompt: "add snow", maxPixels: 40_000_000 },
        {},
      ),
    );
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain("no image in the answer, finish reason STOP");
    expect(error.message).not.toContain(VENDOR_TEXT);
  });
});
