import type { GenerateContentResponse } from "@google/genai";
import type { GenerativeProviderOptions, ProviderEditTask } from "./generative-provider";
import { HostedProvider } from "./hosted-provider";
import { encodeUpload, nearestRatio, promptWithAvoid, sizeNear, type Upload } from "./provider-images";
import { type AttemptHttp, kindOfStatus, UpstreamFailure, type UpstreamTuning } from "./upstream-call";

/**
 * Google's Gemini image models through `generateContent`
 * (`POST /v1beta/models/{model}:generateContent`, key in `x-goog-api-key`):
 * the picture as inline data and the instruction as text, an image part back.
 * Gemini takes no mask and no negative prompt: the mask is applied here (the
 * answer is kept inside it only) and the negative prompt is appended as
 * "Avoid: …". The output aspect is chosen from Gemini's list, nearest the
 * input's.
 */
export const GEMINI_DEFAULT_MODEL = "gemini-3.1-flash-image";

// The aspect ratios every Gemini image model documents (the 3.x models take a few more).
const GEMINI_RATIOS = ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"];

// A candidate ended, or the prompt was blocked, by Gemini's safety system or policies.
const REFUSAL = /SAFETY|PROHIBITED|BLOCKLIST|SPII|RECITATION|MODEL_ARMOR/;

type GenAi = typeof import("@google/genai");

interface GeminiRequest {
  upload: Upload;
  prompt: string;
  aspectRatio: string;
}

export class GeminiProvider extends HostedProvider<GeminiRequest> {
  constructor(options: GenerativeProviderOptions, tuning?: UpstreamTuning) {
    super("gemini", options.model ?? GEMINI_DEFAULT_MODEL, "Google Gemini", options, tuning);
  }

  private loaded: GenAi | undefined;

  /** The SDK, loaded on first use (32 MB that threads without this provider never pay). */
  private async sdk(): Promise<GenAi> {
    this.loaded ??= await import("@google/genai");
    return this.loaded;
  }

  protected async prepare(task: ProviderEditTask): Promise<GeminiRequest> {
    return {
      upload: await encodeUpload(task.image, sizeNear(task.image)),
      prompt: promptWithAvoid(task.prompt, task.negativePrompt),
      aspectRatio: nearestRatio(task.image, GEMINI_RATIOS),
    };
  }

  protected async call(request: GeminiRequest, _task: ProviderEditTask, http: AttemptHttp): Promise<Buffer> {
    const { GoogleGenAI } = await this.sdk();
    const ai = new GoogleGenAI({
      apiKey: this.options.apiKey,
      httpOptions: {
        ...(this.options.baseUrl ? { baseUrl: this.options.baseUrl } : {}),
        // Where Google documents image output (responseModalities, imageConfig); the SDK's default is v1.
        apiVersion: "v1beta",
        // The shared policy retries and times out.
        retryOptions: { attempts: 1 },
        fetch: http.fetch,
      },
    });
    const response = await ai.models.generateContent({
      model: this.model,
      contents: [
        {
          role: "user",
          parts: [
            { inlineData: { mimeType: request.upload.mimeType, data: request.upload.bytes.toString("base64") } },
            { text: request.prompt },
          ],
        },
      ],
      config: {
        responseModalities: ["IMAGE"],
        imageConfig: { aspectRatio: request.aspectRatio },
        abortSignal: http.signal,
      },
    });
    return imageOf(response);
  }

  protected override classify(error: unknown, http: AttemptHttp): UpstreamFailure | undefined {
    // The HTTP layer saw the status already; an ApiError without it came from the SDK reading an answer.
    if (http.failure || !this.loaded || !(error instanceof this.loaded.ApiError)) return undefined;
    return new UpstreamFailure(kindOfStatus(error.status), { status: error.status });
  }
}

function imageOf(response: GenerateContentResponse): Buffer {
  const blocked = response.promptFeedback?.blockReason;
  if (blocked && blocked !== "BLOCKED_REASON_UNSPECIFIED") throw new UpstreamFailure("refused", { code: blocked });
  const candidate = response.candidates?.[0];
  const part = candidate?.content?.parts?.find((each) => each.inlineData?.data);
  if (part?.inlineData?.data) return Buffer.from(part.inlineData.data, "base64");
  const reason = candidate?.finishReason;
  if (reason && REFUSAL.test(reason)) throw new UpstreamFailure("refused", { code: reason });
  // The model answered in words only (it often explains why it will not draw this).
  throw new UpstreamFailure("rejected", {
    unusable: reason ? `no image in the answer, finish reason ${reason}` : "no image in the answer",
  });
}
