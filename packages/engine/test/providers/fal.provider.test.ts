import { HttpResponse, http } from "msw";
import { describe, expect, it } from "vitest";
import { createGenerativeProvider } from "../../src/providers/generative-providers";
import { answerPng, failureOf, KEY, mswServer, photo, providerContract, TUNING, VENDOR_TEXT } from "./provider-contract";

/**
 * fal's synchronous endpoint as documented: `POST https://fal.run/{endpoint}`
 * with `Authorization: Key …` and the model's JSON input (prompt, image_url,
 * output_format), `{ images: [{ url, width, height, content_type }],
 * has_nsfw_concepts, seed }` back, the image on fal's media CDN; model errors
 * as `{ detail: [{ loc, msg, type }] }`, a refusal typed
 * `content_policy_violation`.
 */
const RUN = "https://fal.run/fal-ai/flux-pro/kontext";
const MEDIA = "https://v3.fal.media/files/penguin/abc123/result.png";
const server = mswServer();

const answered = (extra: object = {}) =>
  http.post(RUN, () =>
    HttpResponse.json({
      images: [{ url: MEDIA, width: 1024, height: 1024, content_type: "image/png" }],
      has_nsfw_concepts: [false],
      seed: 7,
      prompt: "",
      ...extra,
    }),
  );

function media(answer: Buffer) {
  return http.get(MEDIA, () =>
    HttpResponse.arrayBuffer(new Uint8Array(answer).buffer, { headers: { "content-type": "image/png" } }),
  );
}

describe("fal", () => {
  providerContract(server, {
    options: { provider: "fal" },
    vendor: "fal",
    submitUrl: RUN,
    success: (answer) => [answered(), media(answer)],
    refusal: () => [
      http.post(RUN, () =>
        HttpResponse.json(
          {
            detail: [
              {
                loc: ["body", "prompt"],
                msg: `The content could not be processed because it contained material flagged by a content checker. ${VENDOR_TEXT}`,
                type: "content_policy_violation",
              },
            ],
          },
          { status: 422 },
        ),
      ),
    ],
    errorBody: (status) => ({
      detail: [
        { loc: ["body"], msg: `${VENDOR_TEXT} Key ${KEY}`, type: status >= 500 ? "internal_server_error" : "request_error" },
      ],
    }),
  });

  it("sends the documented input with the key, the picture as a data URI", async () => {
    let body: Record<string, unknown> | undefined;
    let auth: string | null = null;
    server.use(
      http.post(RUN, async ({ request }) => {
        auth = request.headers.get("authorization");
        body = (await request.json()) as Record<string, unknown>;
        return HttpResponse.json({ images: [{ url: MEDIA }], has_nsfw_concepts: [false] });
      }),
      media(await answerPng(1184, 880)),
    );
    const edit = await createGenerativeProvider({ provider: "fal", apiKey: KEY }, TUNING).edit(
      { image: await photo(), prompt: "colourize it", negativePrompt: "sepia", maxPixels: 40_000_000 },
      {},
    );
    expect(auth).toBe(`Key ${KEY}`);
    expect(body).toMatchObject({ prompt: "colourize it. Avoid: sepia.", output_format: "png", num_images: 1 });
    expect(String(body?.image_url)).toMatch(/^data:image\/jpeg;base64,\/9j\//);
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("an answer whose image fal's checker flagged is content_refused", async () => {
    server.use(answered({ has_nsfw_concepts: [true] }));
    const error = await failureOf(
      createGenerativeProvider({ provider: "fal", apiKey: KEY }, TUNING).edit(
        { image: await photo(), prompt: "colourize it", maxPixels: 40_000_000 },
        {},
      ),
    );
    expect(error.reason).toBe("content_refused");
  });
});
