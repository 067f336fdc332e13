import { type HostedCallOptions, hostedPolicy } from "./hosted-provider";
import type { Upload } from "./provider-images";
import { type AttemptHttp, UpstreamFailure, type UpstreamPolicy, type UpstreamTuning, withDefaults } from "./upstream-call";

/**
 * Stability AI's v2beta REST API, shared by the generative adapter and the
 * background- and object-removal ports: plain fetch (no official JavaScript
 * SDK), multipart, the key as `Authorization: Bearer …`, `Accept:
 * application/json` (the image comes back as base64 with a `finish_reason`).
 * `finish_reason: CONTENT_FILTERED` (the output was blurred by Stability's
 * moderation) and a 403 `content_moderation` error are refusals.
 */
export const STABILITY_BASE_URL = "https://api.stability.ai";
/** The vendor as people know it, for messages. */
export const STABILITY_VENDOR = "Stability AI";

export interface StabilityRequest {
  /** From the base URL: `/v2beta/stable-image/edit/erase`. */
  path: string;
  /** Text fields, in order. */
  fields: [string, string][];
  upload: Upload;
  /** A greyscale PNG, white where to edit. */
  mask: Buffer | undefined;
}

interface StabilityAnswer {
  image?: string;
  finish_reason?: string;
}

/** The base URL without trailing slashes (a test or a proxy may replace Stability's). */
export function stabilityBaseUrl(baseUrl: string | undefined): string {
  return (baseUrl ?? STABILITY_BASE_URL).replace(/\/+$/, "");
}

/** One Stability endpoint's base URL and upstream policy (its own circuit breaker), as the removal ports use it. */
export function stabilityEndpoint(
  path: string,
  options: HostedCallOptions & { baseUrl?: string },
  tuning?: UpstreamTuning,
): { baseUrl: string; policy: UpstreamPolicy } {
  const baseUrl = stabilityBaseUrl(options.baseUrl);
  const policy = hostedPolicy(`stability ${path} ${baseUrl}`, STABILITY_VENDOR, options, withDefaults(tuning), classifyStability);
  return { baseUrl, policy };
}

/** One attempt: the answer's image bytes, or an UpstreamFailure. */
export async function callStability(
  baseUrl: string,
  apiKey: string | undefined,
  request: StabilityRequest,
  http: AttemptHttp,
): Promise<Buffer> {
  const form = new FormData();
  form.append(
    "image",
    new Blob([new Uint8Array(request.upload.bytes)], { type: request.upload.mimeType }),
    request.upload.filename,
  );
  if (request.mask) form.append("mask", new Blob([new Uint8Array(request.mask)], { type: "image/png" }), "mask.png");
  for (const [name, value] of request.fields) form.append(name, value);
  const response = await http.request(`${baseUrl}${request.path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey ?? ""}`, accept: "application/json" },
    body: form,
  });
  const answer = (await response.json()) as StabilityAnswer;
  if (answer.finish_reason === "CONTENT_FILTERED") throw new UpstreamFailure("refused", { code: "CONTENT_FILTERED" });
  if (!answer.image) throw new UpstreamFailure("rejected", { unusable: "no image in the answer" });
  return Buffer.from(answer.image, "base64");
}

/** A 403 `content_moderation` is a refusal, not a refused key. */
export function classifyStability(_error: unknown, http: AttemptHttp): UpstreamFailure | undefined {
  const failure = http.failure;
  if (failure?.detail.status === 403 && /moderation/i.test(failure.detail.code ?? "")) {
    return new UpstreamFailure("refused", failure.detail);
  }
  return undefined;
}
