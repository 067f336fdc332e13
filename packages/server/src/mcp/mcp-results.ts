import { buffer } from "node:stream/consumers";
import type { ContentBlock } from "@modelcontextprotocol/sdk/types.js";
import { MAX_INLINE_IMAGE_BYTES, type Services } from "@retouch/core";

/**
 * What a finished result adds to a tool result besides its JSON: a
 * `resource_link` to the signed URL (a client can fetch or show it without
 * parsing the JSON), and the picture itself as `image` content when it is at
 * most MAX_INLINE_IMAGE_BYTES, so that the agent can look at what it made.
 */
export function createResultContent(services: Services) {
  const base = services.config.publicBaseUrl;

  /** The stored picture behind a signed link this service just made: its size, and its bytes when small enough to inline. */
  async function picture(url: string, jobId: string): Promise<{ size: number; bytes?: Buffer } | undefined> {
    // The service's own link is checked as the files route checks it: it is the capability. Any other link is
    // the store's presigned one (RETOUCH_RESULT_URLS=presigned), just made for this caller's own job.
    const own = url.startsWith(base);
    const link = new URL(own ? url.slice(base.length) : url, "http://link.invalid");
    const file = own
      ? await services.jobs.openSignedResult(link.pathname, link.searchParams)
      : await services.jobs.storedResult(jobId);
    const opened = await services.blobs.open(file.blob);
    if (!opened) return undefined;
    if (opened.size > MAX_INLINE_IMAGE_BYTES) {
      opened.stream.destroy();
      return { size: opened.size };
    }
    return { size: opened.size, bytes: await buffer(opened.stream) };
  }

  async function contentFor(output: Record<string, unknown>): Promise<ContentBlock[]> {
    const { url, format, job_id: jobId, expires_at: expiresAt, width, height } = output;
    if (typeof url !== "string" || typeof format !== "string" || typeof jobId !== "string") return [];
    const mimeType = `image/${format}`;
    const stored = await picture(url, jobId);
    const blocks: ContentBlock[] = [
      {
        type: "resource_link",
        uri: url,
        name: `${jobId}.${format}`,
        title: "Edited image",
        description: `The result of ${jobId} (${width}x${height} ${format}): a signed link, no credentials needed, valid until ${expiresAt}.`,
        mimeType,
        ...(stored ? { size: stored.size } : {}),
      },
    ];
    if (stored?.bytes) blocks.push({ type: "image", data: stored.bytes.toString("base64"), mimeType });
    return blocks;
  }

  return { contentFor };
}
