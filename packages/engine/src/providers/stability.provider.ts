import type { GenerativeProviderOptions, ProviderEditTask } from "./generative-provider";
import { HostedProvider } from "./hosted-provider";
import { encodeUpload, sizeNear, type Upload, whiteWhereMasked } from "./provider-images";
import { type AttemptHttp, UpstreamFailure, type UpstreamTuning } from "./upstream-call";

/**
 * Stability AI's v2beta REST API with plain fetch (no official JavaScript
 * SDK), multipart, key as `Authorization: Bearer …`, `Accept:
 * application/json` (the image comes back as base64 with a `finish_reason`).
 *
 * - With a mask: `POST /v2beta/stable-image/edit/inpaint` (image, mask white
 *   where to edit, prompt, negative_prompt).
 * - Without: Stable Diffusion 3.5 image-to-image, `POST
 *   /v2beta/stable-image/generate/sd3` (mode image-to-image, strength 0.65, the
 *   configured model, default `sd3.5-large`): Stability has no
 *   instruction-following edit endpoint, and this one restyles the picture
 *   while keeping its layout.
 *
 * Both take a real negative prompt. `finish_reason: CONTENT_FILTERED` and a
 * 403 `content_moderation` error are refusals.
 */
export const STABILITY_DEFAULT_MODEL = "sd3.5-large";
const STABILITY_BASE_URL = "https://api.stability.ai";
const IMAGE_TO_IMAGE_STRENGTH = "0.65";

interface StabilityRequest {
  path: string;
  fields: [string, string][];
  upload: Upload;
  mask: Buffer | undefined;
}

interface StabilityAnswer {
  image?: string;
  finish_reason?: string;
}

export class StabilityProvider extends HostedProvider<StabilityRequest> {
  private readonly baseUrl: string;

  constructor(options: GenerativeProviderOptions, tuning?: UpstreamTuning) {
    super("stability", options.model ?? STABILITY_DEFAULT_MODEL, "Stability AI", options, tuning);
    this.baseUrl = (options.baseUrl ?? STABILITY_BASE_URL).replace(/\/+$/, "");
  }

  protected async prepare(task: ProviderEditTask): Promise<StabilityRequest> {
    const size = sizeNear(task.image, { multiple: 64 });
    const upload = await encodeUpload(task.image, size);
    const fields: [string, string][] = [["prompt", task.prompt.trim()]];
    if (task.negativePrompt?.trim()) fields.push(["negative_prompt", task.negativePrompt.trim()]);
    fields.push(["output_format", "png"]);
    if (task.mask) {
      return { path: "/v2beta/stable-image/edit/inpaint", fields, upload, mask: await whiteWhereMasked(task.mask, size) };
    }
    fields.push(["mode", "image-to-image"], ["strength", IMAGE_TO_IMAGE_STRENGTH], ["model", this.model]);
    return { path: "/v2beta/stable-image/generate/sd3", fields, upload, mask: undefined };
  }

  protected async call(request: StabilityRequest, _task: ProviderEditTask, http: AttemptHttp): Promise<Buffer> {
    const form = new FormData();
    form.append(
      "image",
      new Blob([new Uint8Array(request.upload.bytes)], { type: request.upload.mimeType }),
      request.upload.filename,
    );
    if (request.mask) form.append("mask", new Blob([new Uint8Array(request.mask)], { type: "image/png" }), "mask.png");
    for (const [name, value] of request.fields) form.append(name, value);
    const response = await http.request(`${this.baseUrl}${request.path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.options.apiKey ?? ""}`, accept: "application/json" },
      body: form,
    });
    const answer = (await response.json()) as StabilityAnswer;
    if (answer.finish_reason === "CONTENT_FILTERED") throw new UpstreamFailure("refused", { code: "CONTENT_FILTERED" });
    if (!answer.image) throw new UpstreamFailure("rejected", { unusable: "no image in the answer" });
    return Buffer.from(answer.image, "base64");
  }

  protected override classify(_error: unknown, http: AttemptHttp): UpstreamFailure | undefined {
    const failure = http.failure;
    if (failure?.detail.status === 403 && /moderation/i.test(failure.detail.code ?? "")) {
      return new UpstreamFailure("refused", failure.detail);
    }
    return undefined;
  }
}
