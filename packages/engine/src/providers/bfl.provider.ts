import { downloadImage } from "./download";
import type { GenerativeProviderOptions, ProviderEditTask } from "./generative-provider";
import { HostedProvider } from "./hosted-provider";
import { encodeUpload, nearestRatio, promptWithAvoid, sizeNear } from "./provider-images";
import { type AttemptHttp, pollUntil, safeCode, UpstreamFailure, type UpstreamTuning } from "./upstream-call";

/**
 * Black Forest Labs' FLUX.1 Kontext, with plain fetch (BFL has no official
 * JavaScript SDK): `POST /v1/{model}` with the key in `x-key` and a JSON body
 * (prompt, input_image as base64, aspect_ratio, output_format), answered with
 * `{ id, polling_url }`; the polling URL is read until `status` is `Ready`,
 * and `result.sample` is a signed link to the image, downloaded at once (it
 * expires after ten minutes). "Request Moderated" and "Content Moderated" are
 * refusals. Kontext takes no mask and no negative prompt: the mask is applied
 * here, the negative prompt appended as "Avoid: …".
 */
export const BFL_DEFAULT_MODEL = "flux-kontext-pro";
const BFL_BASE_URL = "https://api.bfl.ai";

// Kontext takes aspect ratios between 21:9 and 9:21.
const KONTEXT_RATIOS = ["21:9", "16:9", "3:2", "4:3", "5:4", "1:1", "4:5", "3:4", "2:3", "9:16", "9:21"];
const MODERATED = new Set(["Request Moderated", "Content Moderated"]);
const STILL_WORKING = new Set(["Pending", "Processing", "Queued", "Reasoning", "Generating"]);

interface BflRequest {
  body: string;
}

interface BflSubmitted {
  id?: string;
  polling_url?: string;
}

interface BflResult {
  status?: string;
  result?: { sample?: string } | null;
}

export class BflProvider extends HostedProvider<BflRequest> {
  private readonly baseUrl: string;

  constructor(options: GenerativeProviderOptions, tuning?: UpstreamTuning) {
    super("bfl", options.model ?? BFL_DEFAULT_MODEL, "Black Forest Labs", options, tuning);
    this.baseUrl = (options.baseUrl ?? BFL_BASE_URL).replace(/\/+$/, "");
  }

  protected async prepare(task: ProviderEditTask): Promise<BflRequest> {
    const upload = await encodeUpload(task.image, sizeNear(task.image));
    return {
      body: JSON.stringify({
        prompt: promptWithAvoid(task.prompt, task.negativePrompt),
        input_image: upload.bytes.toString("base64"),
        aspect_ratio: nearestRatio(task.image, KONTEXT_RATIOS),
        output_format: "png",
      }),
    };
  }

  protected async call(request: BflRequest, _task: ProviderEditTask, http: AttemptHttp): Promise<Buffer> {
    const submitted = (await (
      await http.request(`${this.baseUrl}/v1/${encodeURIComponent(this.model)}`, {
        method: "POST",
        headers: { "x-key": this.options.apiKey ?? "", "content-type": "application/json", accept: "application/json" },
        body: request.body,
      })
    ).json()) as BflSubmitted;
    const pollingUrl = submitted.polling_url ?? (submitted.id ? `${this.baseUrl}/v1/get_result?id=${submitted.id}` : undefined);
    if (!pollingUrl) throw new UpstreamFailure("rejected", { unusable: "no polling URL in the answer" });
    const sample = await pollUntil(http, this.tuning.pollIntervalMs, async () => {
      const result = (await (
        await http.request(pollingUrl, { headers: { ...this.keyFor(pollingUrl), accept: "application/json" } })
      ).json()) as BflResult;
      const status = result.status ?? "";
      if (status === "Ready") {
        if (!result.result?.sample) throw new UpstreamFailure("rejected", { unusable: "no image link in the result" });
        return result.result.sample;
      }
      if (MODERATED.has(status)) throw new UpstreamFailure("refused", { code: safeCode(status.replace(" ", "_")) });
      if (STILL_WORKING.has(status)) return undefined;
      // "Error", "Failed", "Task not found": the generation failed on BFL's side; a new submission may succeed.
      throw new UpstreamFailure("transient", { code: safeCode(status.replace(/ /g, "_")) ?? "unknown_status" });
    });
    return downloadImage(http, sample);
  }

  /** The key goes only to BFL's own hosts (the polling URL comes from the answer). */
  private keyFor(url: string): Record<string, string> {
    const host = new URL(url).hostname;
    const own = host === new URL(this.baseUrl).hostname || host === "bfl.ai" || host.endsWith(".bfl.ai");
    return own ? { "x-key": this.options.apiKey ?? "" } : {};
  }
}
