import { downloadImage } from "./download";
import type { GenerativeProviderOptions, ProviderEditTask } from "./generative-provider";
import { HostedProvider } from "./hosted-provider";
import { dataUri, encodeUpload, promptWithAvoid, sizeNear } from "./provider-images";
import { type AttemptHttp, UpstreamFailure, type UpstreamTuning } from "./upstream-call";

/**
 * fal's hosted models through the official client's `run`
 * (`POST https://fal.run/{endpoint}`, key as `Authorization: Key …`): the
 * picture as a data URI in `image_url`, the answer's `images[0].url`
 * downloaded. FLUX.1 Kontext [pro] (the default) takes no mask and no
 * negative prompt: the mask is applied here, the negative prompt appended as
 * "Avoid: …". A `content_policy_violation` error, or an answer whose
 * `has_nsfw_concepts` flags the image, is a refusal.
 */
export const FAL_DEFAULT_MODEL = "fal-ai/flux-pro/kontext";

const REFUSAL_CODES = new Set(["content_policy_violation"]);

interface FalRequest {
  input: Record<string, unknown>;
}

interface FalOutput {
  images?: { url?: string }[];
  has_nsfw_concepts?: boolean[];
}

export class FalProvider extends HostedProvider<FalRequest> {
  constructor(options: GenerativeProviderOptions, tuning?: UpstreamTuning) {
    super("fal", options.model ?? FAL_DEFAULT_MODEL, "fal", options, tuning);
  }

  protected async prepare(task: ProviderEditTask): Promise<FalRequest> {
    return {
      input: {
        prompt: promptWithAvoid(task.prompt, task.negativePrompt),
        image_url: dataUri(await encodeUpload(task.image, sizeNear(task.image))),
        output_format: "png",
        num_images: 1,
      },
    };
  }

  protected async call(request: FalRequest, _task: ProviderEditTask, http: AttemptHttp): Promise<Buffer> {
    // Loaded on first use, like every vendor's SDK: threads without this provider never load it.
    const { createFalClient } = await import("@fal-ai/client");
    const fal = createFalClient({
      credentials: this.options.apiKey,
      fetch: http.fetch,
      // No status is retried by the client (its per-call retry count stays, with nothing to retry); the shared policy decides.
      retry: { maxRetries: 0, retryableStatusCodes: [] },
    });
    const result = await fal.run(this.model, { input: request.input, abortSignal: http.signal });
    const output = result.data as FalOutput;
    if (output.has_nsfw_concepts?.[0]) throw new UpstreamFailure("refused", { code: "has_nsfw_concepts" });
    const url = output.images?.[0]?.url;
    if (!url) throw new UpstreamFailure("rejected", { unusable: "no image in the answer" });
    return downloadImage(http, url);
  }

  protected override classify(_error: unknown, http: AttemptHttp): UpstreamFailure | undefined {
    const failure = http.failure;
    const refused = failure?.detail.code !== undefined && REFUSAL_CODES.has(failure.detail.code);
    return refused ? new UpstreamFailure("refused", failure.detail) : undefined;
  }
}
