import { downloadImage } from "./download";
import type { GenerativeProviderOptions, ProviderEditTask } from "./generative-provider";
import { HostedProvider } from "./hosted-provider";
import {
  encodeUpload,
  nearestRatio,
  promptWithAvoid,
  type Size,
  sizeNear,
  transparentWhereMasked,
  type Upload,
} from "./provider-images";
import { type AttemptHttp, UpstreamFailure, type UpstreamTuning } from "./upstream-call";

/**
 * OpenAI's Images API, `POST /v1/images/edits` (multipart: image, mask,
 * prompt, model, size), and any self-hosted server that speaks it
 * (`openai-compatible`: another base URL, the key optional).
 *
 * The mask is a PNG of the image's size whose transparent pixels mark the
 * area to edit. GPT image models answer base64 (`b64_json`); servers that
 * answer a URL are followed. There is no negative-prompt parameter: it is
 * appended to the prompt as "Avoid: …".
 */
export const OPENAI_DEFAULT_MODEL = "gpt-image-2.5-flare";
const OPENAI_BASE_URL = "https://api.openai.com/v1";

// These take only the three standard sizes; the gpt-image-2 family takes any WxH in multiples of 16.
const STANDARD_SIZE_MODELS = /^(?:gpt-image-1(?:\.5|-mini)?|chatgpt-image-latest|dall-e-[23])(?:$|-)/;
const STANDARD_SIZES = ["1024x1024", "1536x1024", "1024x1536"];

// OpenAI's codes for a refusal by its safety system.
const REFUSAL_CODES = new Set(["moderation_blocked", "content_policy_violation"]);

interface OpenAiRequest {
  upload: Upload;
  mask: Buffer | undefined;
  /** Sent as `size` (the standard or WxH size the upload was scaled to); none for compatible servers. */
  size: string | undefined;
  prompt: string;
}

export class OpenAiProvider extends HostedProvider<OpenAiRequest> {
  private readonly compatible: boolean;
  private loaded: typeof import("openai") | undefined;

  constructor(options: GenerativeProviderOptions, tuning?: UpstreamTuning) {
    const compatible = options.provider === "openai-compatible";
    super(
      options.provider,
      options.model ?? (compatible ? "server default" : OPENAI_DEFAULT_MODEL),
      compatible ? "OpenAI-compatible server" : "OpenAI",
      options,
      tuning,
    );
    this.compatible = compatible;
  }

  protected async prepare(task: ProviderEditTask): Promise<OpenAiRequest> {
    const { size, sent } = this.outputSize(task.image);
    const upload = await encodeUpload(task.image, size);
    return {
      upload,
      mask: task.mask ? await transparentWhereMasked(task.mask, size) : undefined,
      size: sent,
      prompt: promptWithAvoid(task.prompt, task.negativePrompt),
    };
  }

  /** The size to ask for, nearest the input's aspect, and the upload scaled to it so the mask lines up. */
  private outputSize(image: Size): { size: Size; sent: string | undefined } {
    if (this.compatible) return { size: sizeNear(image), sent: undefined };
    if (STANDARD_SIZE_MODELS.test(this.model)) {
      const sent = nearestRatio(image, STANDARD_SIZES);
      const [width = 1024, height = 1024] = sent.split("x").map(Number);
      return { size: { width, height }, sent };
    }
    // gpt-image-2 and later: multiples of 16, aspect between 1:3 and 3:1.
    const size = sizeNear(image, { multiple: 16, minAspect: 1 / 3, maxAspect: 3 });
    return { size, sent: `${size.width}x${size.height}` };
  }

  /** The SDK, loaded on first use: 37 MB and most of a second that threads without this provider never pay. */
  private async sdk(): Promise<typeof import("openai")> {
    this.loaded ??= await import("openai");
    return this.loaded;
  }

  protected async call(request: OpenAiRequest, _task: ProviderEditTask, http: AttemptHttp): Promise<Buffer> {
    const { default: OpenAIClient, toFile } = await this.sdk();
    const client = new OpenAIClient({
      apiKey: this.options.apiKey ?? "no-key",
      baseURL: this.options.baseUrl ?? OPENAI_BASE_URL,
      organization: null,
      project: null,
      // The shared policy retries and times out; the client's own would count attempts twice.
      maxRetries: 0,
      // Later than the policy's own limit, which then ends the attempt and says so.
      timeout: this.policy.timeoutMs + 5_000,
      fetch: http.fetch,
      // A compatible server without a key gets no Authorization header at all.
      ...(this.options.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
    });
    const answer = await client.images.edit(
      {
        image: await toFile(request.upload.bytes, request.upload.filename, { type: request.upload.mimeType }),
        ...(request.mask ? { mask: await toFile(request.mask, "mask.png", { type: "image/png" }) } : {}),
        prompt: request.prompt,
        ...(this.compatible && !this.options.model ? {} : { model: this.model }),
        n: 1,
        ...(request.size ? { size: request.size } : {}),
        // GPT image models always answer base64; a compatible server may default to URLs.
        ...(this.compatible ? { response_format: "b64_json" as const } : {}),
      },
      { signal: http.signal },
    );
    const image = answer.data?.[0];
    if (image?.b64_json) return Buffer.from(image.b64_json, "base64");
    if (image?.url) return downloadImage(http, image.url);
    throw new UpstreamFailure("rejected", { unusable: "no image in the answer" });
  }

  protected override classify(error: unknown, http: AttemptHttp): UpstreamFailure | undefined {
    const failure = http.failure;
    const apiError = this.loaded && error instanceof this.loaded.APIError ? error : undefined;
    const code = failure?.detail.code ?? apiError?.code ?? undefined;
    return code && REFUSAL_CODES.has(code) ? new UpstreamFailure("refused", { ...failure?.detail, code }) : undefined;
  }
}
