import type { IncomingMessage } from "node:http";
import { RetouchError } from "@retouch/core";

/** Largest JSON body accepted, per route. Image submissions get their own limit later. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

export function isJsonContentType(req: IncomingMessage): boolean {
  const type = req.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
  return type === "application/json" || (type?.endsWith("+json") ?? false);
}

/**
 * Reads and parses a JSON body before any adapter sees it, so that an
 * oversized body is refused (413) as soon as it is announced or exceeded,
 * without buffering it, and malformed JSON is a 400 with a clear message.
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limitBytes) {
    req.resume();
    throw new RetouchError("payload_too_large", `The request body is larger than ${limitBytes} bytes.`);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req) {
    received += (chunk as Buffer).length;
    if (received > limitBytes) {
      req.resume();
      throw new RetouchError("payload_too_large", `The request body is larger than ${limitBytes} bytes.`);
    }
    chunks.push(chunk as Buffer);
  }
  if (received === 0) return undefined;
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RetouchError("invalid_json", `The request body is not valid JSON: ${(error as Error).message}`);
  }
}
