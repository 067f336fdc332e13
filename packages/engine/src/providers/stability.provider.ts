import type { GenerativeProviderOptions, ProviderEditTask } from "./generative-provider";
import { HostedProvider } from "./hosted-provider";
import { encodeUpload, sizeNear, whiteWhereMasked } from "./provider-images";
import { callStability, classifyStability, STABILITY_VENDOR, type StabilityRequest, stabilityBaseUrl } from "./stability-api";
import type { AttemptHttp, UpstreamFailure, UpstreamTuning } from "./upstream-call";

/**
 * Stability AI's generative edits (the wire format: stability-api.ts).
 *
 * - With a mask: `POST /v2beta/stable-image/edit/inpaint` (image, mask white
 *   where to edit, prompt, negative_prompt).
 * - Without: Stable Diffusion 3.5 image-to-image, `POST
 *   /v2beta/stable-image/generate/sd3` (mode image-to-image, strength 0.65, the
 *   configured model, default `sd3.5-large`): Stability has no
 *   instruction-following edit endpoint, and this one restyles the picture
 *   while keeping its layout.
 *
 * Both take a real negative prompt.
 */
export const STABILITY_DEFAULT_MODEL = "sd3.5-large";
const IMAGE_TO_IMAGE_STRENGTH = "0.65";

export class StabilityProvider extends HostedProvider<StabilityRequest> {
  private readonly baseUrl: string;

  constructor(options: GenerativeProviderOptions, tuning?: UpstreamTuning) {
    super("stability", options.model ?? STABILITY_DEFAULT_MODEL, STABILITY_VENDOR, options, tuning);
    this.baseUrl = stabilityBaseUrl(options.baseUrl);
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

  protected call(request: StabilityRequest, _task: ProviderEditTask, http: AttemptHttp): Promise<Buffer> {
    return callStability(this.baseUrl, this.options.apiKey, request, http);
  }

  protected override classify(error: unknown, http: AttemptHttp): UpstreamFailure | undefined {
    return classifyStability(error, http);
  }
}
