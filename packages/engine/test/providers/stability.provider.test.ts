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
 * Stability AI's v2beta REST API as documented: multipart with
 * `Authorization: Bearer` and `Accept: application/json`; `{ image (base64),
 * finish_reason, seed }` back; errors as `{ id, name, errors: [...] }`, a
 * moderated request as 403 `content_moderation`, a filtered output as
 * `finish_reason: CONTENT_FILTERED`. Without a mask the edit is SD 3.5
 * image-to-image (`/generate/sd3`), with one it is `/edit/inpaint`.
 */
const SD3 = "https://api.stability.ai/v2beta/stable-image/generate/sd3";
const INPAINT = "https://api.stability.ai/v2beta/stable-image/edit/inpaint";
const server = mswServer();

const answered = (url: string, answer: Buffer) =>
  http.post(url, () => HttpResponse.json({ image: answer.toString("base64"), finish_reason: "SUCCESS", seed: 42 }));

describe("Stability AI", () => {
  providerContract(server, {
    options: { provider: "stability" },
    vendor: "Stability AI",
    submitUrl: SD3,
    success: (answer) => [answered(SD3, answer), answered(INPAINT, answer)],
    refusal: () => [
      http.post(SD3, () =>
        HttpResponse.json(
          {
            id: "a1b2",
            name: "content_moderation",
            errors: [`Your request was flagged by our content moderation system. ${VENDOR_TEXT}`],
          },
          { status: 403 },
        ),
      ),
    ],
    errorBody: (status) => ({
      id: "e1",
      name: status === 429 ? "rate_limit_exceeded" : "internal_error",
      errors: [`${VENDOR_TEXT} ${KEY}`],
    }),
  });

  it("without a mask: SD 3.5 image-to-image with the documented fields and a real negative prompt", async () => {
    let form: FormData | undefined;
    let auth: string | null = null;
    let accept: string | null = null;
    server.use(
      http.post(SD3, async ({ request }) => {
        auth = request.headers.get("authorization");
        accept = request.headers.get("accept");
        form = await request.formData();
        return HttpResponse.json({ image: (await answerPng(1216, 832)).toString("base64"), finish_reason: "SUCCESS" });
      }),
    );
    const edit = await createGenerativeProvider({ provider: "stability", apiKey: KEY }, TUNING).edit(
      { image: await photo(), prompt: "make it a watercolour painting", negativePrompt: "frame", maxPixels: 40_000_000 },
      {},
    );
    expect(auth).toBe(`Bearer ${KEY}`);
    expect(accept).toBe("application/json");
    expect(Object.fromEntries([...(form?.entries() ?? [])].filter(([, value]) => typeof value === "string"))).toEqual({
      prompt: "make it a watercolour painting",
      negative_prompt: "frame",
      output_format: "png",
      mode: "image-to-image",
      strength: "0.65",
      model: "sd3.5-large",
    });
    const image = form?.get("image") as File;
    expect(await pngInfo(new Uint8Array(await image.arrayBuffer()))).toMatchObject({ format: "jpeg", width: 1280, height: 832 });
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("with a mask: inpaint, the mask white where to edit", async () => {
    let form: FormData | undefined;
    server.use(
      http.post(INPAINT, async ({ request }) => {
        form = await request.formData();
        return HttpResponse.json({ image: (await answerPng(1280, 832)).toString("base64"), finish_reason: "SUCCESS" });
      }),
    );
    await createGenerativeProvider({ provider: "stability", apiKey: KEY }, TUNING).edit(
      { image: await photo(), prompt: "a vase of tulips", mask: leftHalfMask(320, 200), maxPixels: 40_000_000 },
      {},
    );
    expect(form?.get("mode")).toBeNull();
    expect(form?.get("prompt")).toBe("a vase of tulips");
    const mask = new Uint8Array((await (form?.get("mask") as File | undefined)?.arrayBuffer()) ?? new ArrayBuffer(0));
    expect(await pngInfo(mask)).toEqual({ width: 1280, height: 832, format: "png", channels: 1 });
    const { data } = await sharp(mask).extractChannel(0).raw().toBuffer({ resolveWithObject: true });
    expect(data[400 * 1280 + 100]).toBe(255);
    expect(data[400 * 1280 + 1200]).toBe(0);
  });

  it("an output the content filter caught is content_refused", async () => {
    server.use(http.post(SD3, () => HttpResponse.json({ image: "", finish_reason: "CONTENT_FILTERED", seed: 1 })));
    const error = await failureOf(
      createGenerativeProvider({ provider: "stability", apiKey: KEY }, TUNING).edit(
        { image: await photo(), prompt: "make it a watercolour painting", maxPixels: 40_000_000 },
        {},
      ),
    );
    expect(error.reason).toBe("content_refused");
  });
});
