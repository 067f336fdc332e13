import { HttpResponse, http } from "msw";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { createGenerativeProvider } from "../../src/providers/generative-providers";
import {
  answerPng,
  failureOf,
  KEY,
  leftHalfMask,
  mswServer,
  photo,
  pngInfo,
  providerContract,
  TUNING,
  VENDOR_TEXT,
} from "./provider-contract";

/**
 * OpenAI's `POST /v1/images/edits` as its API reference documents it:
 * multipart (image, mask, prompt, model, n, size), `Authorization: Bearer`,
 * `{ created, data: [{ b64_json }] }` back, errors as `{ error: { message,
 * type, param, code } }`, a refusal by the safety system as 400
 * `moderation_blocked`.
 */
const EDITS = "https://api.openai.com/v1/images/edits";
const server = mswServer();

const b64Answer = (answer: Buffer) =>
  http.post(EDITS, () => HttpResponse.json({ created: 1_763_900_000, data: [{ b64_json: answer.toString("base64") }] }));

const errorBody = (status: number) => ({
  error: {
    message: `${VENDOR_TEXT} request with key ${KEY}`,
    type: status === 429 ? "requests" : status >= 500 ? "server_error" : "invalid_request_error",
    param: null,
    code: status === 429 ? "rate_limit_exceeded" : status === 401 ? "invalid_api_key" : null,
  },
});

describe("OpenAI", () => {
  providerContract(server, {
    options: { provider: "openai" },
    vendor: "OpenAI",
    submitUrl: EDITS,
    success: (answer) => [b64Answer(answer)],
    refusal: () => [
      http.post(EDITS, () =>
        HttpResponse.json(
          {
            error: {
              message: `Your request was rejected by the safety system. ${VENDOR_TEXT}`,
              type: "image_generation_user_error",
              param: null,
              code: "moderation_blocked",
            },
          },
          { status: 400 },
        ),
      ),
    ],
    errorBody,
  });

  it("sends the documented multipart request: key, model, prompt with the negative prompt, a size near the input's aspect, the mask as transparency", async () => {
    let form: FormData | undefined;
    let auth: string | null = null;
    server.use(
      http.post(EDITS, async ({ request }) => {
        auth = request.headers.get("authorization");
        form = await request.formData();
        return HttpResponse.json({ created: 1, data: [{ b64_json: (await answerPng(1536, 960)).toString("base64") }] });
      }),
    );
    const provider = createGenerativeProvider({ provider: "openai", apiKey: KEY }, TUNING);
    const edit = await provider.edit(
      {
        image: await photo(),
        prompt: "put a red hat on the cat",
        negativePrompt: "text, watermark",
        mask: leftHalfMask(320, 200),
        maxPixels: 40_000_000,
      },
      {},
    );
    expect(auth).toBe(`Bearer ${KEY}`);
    expect(provider.model).toBe("gpt-image-2.5-flare");
    expect(form?.get("model")).toBe("gpt-image-2.5-flare");
    expect(form?.get("prompt")).toBe("put a red hat on the cat. Avoid: text, watermark.");
    expect(form?.get("n")).toBe("1");
    // 16:10 at about a megapixel, in multiples of 16 (the gpt-image-2 family takes any such size).
    expect(form?.get("size")).toBe("1296x816");
    const image = form?.get("image") as File;
    expect(image.type).toBe("image/jpeg");
    expect(await pngInfo(new Uint8Array(await image.arrayBuffer()))).toMatchObject({ width: 1296, height: 816, format: "jpeg" });
    const mask = form?.get("mask") as File;
    expect(mask.type).toBe("image/png");
    const maskBytes = new Uint8Array(await mask.arrayBuffer());
    expect(await pngInfo(maskBytes)).toMatchObject({ width: 1296, height: 816, format: "png", channels: 4 });
    // Transparent (alpha 0) where the edit goes, opaque elsewhere.
    const { data } = await sharp(maskBytes).raw().toBuffer({ resolveWithObject: true });
    expect(data[(400 * 1296 + 100) * 4 + 3]).toBe(0);
    expect(data[(400 * 1296 + 1200) * 4 + 3]).toBe(255);
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("asks models that take only the standard sizes for the nearest of them", async () => {
    let size: unknown;
    server.use(
      http.post(EDITS, async ({ request }) => {
        size = (await request.formData()).get("size");
        return HttpResponse.json({ created: 1, data: [{ b64_json: (await answerPng(1536, 1024)).toString("base64") }] });
      }),
    );
    const provider = createGenerativeProvider({ provider: "openai", apiKey: KEY, model: "gpt-image-1.5" }, TUNING);
    const edit = await provider.edit({ image: await photo(), prompt: "make it snowy", maxPixels: 40_000_000 }, {});
    expect(size).toBe("1536x1024");
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("an answer without an image is upstream_failed, not a crash", async () => {
    server.use(http.post(EDITS, () => HttpResponse.json({ created: 1, data: [] })));
    const error = await failureOf(
      createGenerativeProvider({ provider: "openai", apiKey: KEY }, TUNING).edit(
        { image: await photo(), prompt: "make it snowy", maxPixels: 40_000_000 },
        {},
      ),
    );
    expect(error.reason).toBe("upstream_failed");
    expect(error.message).toContain("answered without a usable image (no image in the answer)");
  });
});

describe("openai-compatible", () => {
  const BASE = "http://gpu-box.internal:8000/v1";

  it("posts to the configured base URL without a key or a size, asks for base64, and follows an answer given as a URL", async () => {
    let form: FormData | undefined;
    let auth: string | null = "unset";
    server.use(
      http.post(`${BASE}/images/edits`, async ({ request }) => {
        auth = request.headers.get("authorization");
        form = await request.formData();
        return HttpResponse.json({ created: 1, data: [{ url: "http://gpu-box.internal:8000/files/out.png" }] });
      }),
      http.get("http://gpu-box.internal:8000/files/out.png", async () =>
        HttpResponse.arrayBuffer(new Uint8Array(await answerPng(768, 768)).buffer, { headers: { "content-type": "image/png" } }),
      ),
    );
    const provider = createGenerativeProvider({ provider: "openai-compatible", baseUrl: BASE }, TUNING);
    const edit = await provider.edit({ image: await photo(), prompt: "make it a watercolour", maxPixels: 40_000_000 }, {});
    expect(auth).toBeNull();
    expect(form?.get("model")).toBeNull();
    expect(form?.get("size")).toBeNull();
    expect(form?.get("response_format")).toBe("b64_json");
    expect(provider.model).toBe("server default");
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("sends the configured model and key when there are", async () => {
    let form: FormData | undefined;
    let auth: string | null = null;
    server.use(
      http.post(`${BASE}/images/edits`, async ({ request }) => {
        auth = request.headers.get("authorization");
        form = await request.formData();
        return HttpResponse.json({ created: 1, data: [{ b64_json: (await answerPng(512, 512)).toString("base64") }] });
      }),
    );
    const provider = createGenerativeProvider(
      { provider: "openai-compatible", baseUrl: BASE, apiKey: KEY, model: "qwen-image-edit" },
      TUNING,
    );
    await provider.edit({ image: await photo(), prompt: "make it a watercolour", maxPixels: 40_000_000 }, {});
    expect(auth).toBe(`Bearer ${KEY}`);
    expect(form?.get("model")).toBe("qwen-image-edit");
  });
});
