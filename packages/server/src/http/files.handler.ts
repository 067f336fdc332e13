import type { IncomingMessage, ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import { RetouchError, type Services } from "@retouch/core";

export const FILES_PREFIX = "/files/";

const CONTENT_TYPES: Record<string, string> = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp" };

/** Serves a result image to whoever holds a valid signed link (no other credential needed). */
export async function serveSignedFile(services: Services, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const file = await services.jobs.openSignedResult(url.pathname, url.searchParams);
  const opened = await services.blobs.open(file.blob);
  if (!opened) {
    // Deleted between the lookup and now (retention sweep).
    throw new RetouchError("not_found", "This result has expired and was deleted.");
  }
  const expires = Number(url.searchParams.get("expires"));
  res.writeHead(200, {
    "Content-Type": CONTENT_TYPES[file.format] ?? "application/octet-stream",
    "Content-Length": opened.size,
    "Content-Disposition": `inline; filename="${file.jobId}.${file.format}"`,
    // Private: the link is a credential. Cacheable by the browser until it expires.
    "Cache-Control": `private, max-age=${Math.max(0, expires - Math.floor(Date.now() / 1000))}`,
    "X-Content-Type-Options": "nosniff",
  });
  if (req.method === "HEAD") {
    opened.stream.destroy();
    res.end();
    return;
  }
  await pipeline(opened.stream, res);
}
