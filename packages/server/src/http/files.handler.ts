import { Readable } from "node:stream";
import { RetouchError, type Services } from "@retouch/core";
import { isOutputFormat } from "@retouch/engine";
import type { HttpContext } from "./request-context";

export const FILES_PREFIX = "/files/";

/** Serves a result image to whoever holds a valid signed link (no other credential needed). */
export async function serveSignedFile(services: Services, c: HttpContext): Promise<Response> {
  const url = new URL(c.req.url);
  const file = await services.jobs.openSignedResult(url.pathname, url.searchParams);
  const opened = await services.blobs.open(file.blob);
  if (!opened) {
    // Deleted between the lookup and now (retention sweep).
    throw new RetouchError("not_found", "This result has expired and was deleted.");
  }
  const expires = Number(url.searchParams.get("expires"));
  const headers = {
    // Each output format's media type is image/<its name> (the engine's list).
    "Content-Type": isOutputFormat(file.format) ? `image/${file.format}` : "application/octet-stream",
    "Content-Length": String(opened.size),
    "Content-Disposition": `inline; filename="${file.jobId}.${file.format}"`,
    // Private: the link is a credential. Cacheable by the browser until it expires.
    "Cache-Control": `private, max-age=${Math.max(0, expires - Math.floor(Date.now() / 1000))}`,
    // A signed link is meant to be shown anywhere (an <img> on the client's own site).
    "Cross-Origin-Resource-Policy": "cross-origin",
  };
  if (c.req.method === "HEAD") {
    opened.stream.destroy();
    return new Response(null, { headers });
  }
  return new Response(Readable.toWeb(opened.stream) as ReadableStream<Uint8Array>, { headers });
}
