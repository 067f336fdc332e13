import { type AttemptHttp, UpstreamFailure } from "./upstream-call";

/** Answers larger than this are not images an edit returns. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * Fetches an answer image a vendor left at a URL (BFL, Replicate, fal), under
 * the attempt's time limit. No credentials go with it: these are the
 * vendors' signed delivery links.
 */
export async function downloadImage(http: AttemptHttp, url: string): Promise<Buffer> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UpstreamFailure("rejected", { unusable: "the answer's image link is not a URL" });
  }
  if (parsed.protocol === "data:") {
    const comma = url.indexOf(",");
    const meta = url.slice(5, comma);
    return meta.endsWith(";base64")
      ? Buffer.from(url.slice(comma + 1), "base64")
      : Buffer.from(decodeURIComponent(url.slice(comma + 1)));
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new UpstreamFailure("rejected", { unusable: "the answer's image link is not http(s)" });
  }
  const response = await http.request(parsed, { method: "GET" });
  const declared = Number(response.headers.get("content-length") ?? 0);
  if (declared > MAX_ANSWER_BYTES) throw new UpstreamFailure("rejected", { unusable: "the answer's image is too large" });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (bytes.length > MAX_ANSWER_BYTES) throw new UpstreamFailure("rejected", { unusable: "the answer's image is too large" });
  return bytes;
}
