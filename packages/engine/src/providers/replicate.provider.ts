import type { Prediction } from "replicate";
import { downloadImage } from "./download";
import type { GenerativeProviderOptions, ProviderEditTask } from "./generative-provider";
import { HostedProvider } from "./hosted-provider";
import { dataUri, encodeUpload, promptWithAvoid, sizeNear } from "./provider-images";
import { type AttemptHttp, pollUntil, safeCode, UpstreamFailure, type UpstreamTuning } from "./upstream-call";

/**
 * Any Replicate image-editing model through the official client:
 * `POST /v1/models/{owner}/{name}/predictions` (or `/v1/predictions` with a
 * version for `owner/name:version`), `Prefer: wait`, then the prediction is
 * polled until it has succeeded; its output is a link to the image.
 *
 * FLUX.1 Kontext (the default) takes `input_image`, `aspect_ratio:
 * match_input_image` and `output_format`; other models (Qwen-Image-Edit and
 * the like) get the picture as `image`. None of them takes a mask or a
 * negative prompt: the mask is applied here, the negative prompt appended as
 * "Avoid: …". A failed prediction whose error says the input or output was
 * flagged (Replicate's E005) is a refusal.
 */
export const REPLICATE_DEFAULT_MODEL = "black-forest-labs/flux-kontext-pro";

const REFUSAL = /\bE005\b|flagged as sensitive|nsfw|content moderat|safety (?:filter|checker|system)/i;
const RUNNING = new Set(["starting", "processing"]);

interface ReplicateRequest {
  input: Record<string, unknown>;
}

export class ReplicateProvider extends HostedProvider<ReplicateRequest> {
  constructor(options: GenerativeProviderOptions, tuning?: UpstreamTuning) {
    super("replicate", options.model ?? REPLICATE_DEFAULT_MODEL, "Replicate", options, tuning);
  }

  protected async prepare(task: ProviderEditTask): Promise<ReplicateRequest> {
    const image = dataUri(await encodeUpload(task.image, sizeNear(task.image)));
    const prompt = promptWithAvoid(task.prompt, task.negativePrompt);
    const kontext = /kontext/i.test(this.model);
    return {
      input: kontext
        ? { prompt, input_image: image, aspect_ratio: "match_input_image", output_format: "png" }
        : { prompt, image, output_format: "png" },
    };
  }

  protected async call(request: ReplicateRequest, _task: ProviderEditTask, http: AttemptHttp): Promise<Buffer> {
    // Loaded on first use, like every vendor's SDK: threads without this provider never load it.
    const { default: Replicate } = await import("replicate");
    const replicate = new Replicate({
      auth: this.options.apiKey,
      ...(this.options.baseUrl ? { baseUrl: this.options.baseUrl } : {}),
      // The client retries a 429 (and a poll's 5xx) five times at once, without waiting; this
      // fetch answers those retries with the first answer, and the shared policy decides.
      fetch: http.fetch,
      useFileOutput: false,
    });
    const [model, version] = this.model.split(":");
    let prediction = await replicate.predictions.create({
      ...(version ? { version } : { model: model ?? this.model }),
      input: request.input,
      wait: true,
      signal: http.signal,
    });
    prediction = await pollUntil(http, this.tuning.pollIntervalMs, async () => {
      if (!RUNNING.has(prediction.status)) return prediction;
      prediction = await replicate.predictions.get(prediction.id, { signal: http.signal });
      return RUNNING.has(prediction.status) ? undefined : prediction;
    });
    return downloadImage(http, outputUrl(prediction));
  }
}

function outputUrl(prediction: Prediction): string {
  if (prediction.status === "failed") {
    const error = typeof prediction.error === "string" ? prediction.error : JSON.stringify(prediction.error ?? "");
    if (REFUSAL.test(error)) throw new UpstreamFailure("refused", { code: "E005" });
    throw new UpstreamFailure("rejected", { unusable: "the prediction failed" });
  }
  if (prediction.status !== "succeeded")
    throw new UpstreamFailure("rejected", { unusable: `the prediction ended ${safeCode(prediction.status) ?? "unexpectedly"}` });
  const output: unknown = prediction.output;
  const url = Array.isArray(output) ? output[0] : output;
  if (typeof url !== "string") throw new UpstreamFailure("rejected", { unusable: "no image link in the output" });
  return url;
}
