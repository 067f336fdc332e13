import type { ServerResponse } from "node:http";
import { type RetouchError, toRetouchError, trpcErrorResponse } from "@retouch/core";

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

export function sendError(res: ServerResponse, error: unknown): RetouchError {
  const domain = toRetouchError(error);
  if (!res.headersSent) sendJson(res, domain.status, domain.toBody(), domain.headers());
  else res.destroy();
  return domain;
}

/** The same refusal in the envelope tRPC clients parse (for answers given before the tRPC adapter runs). */
export function sendTrpcError(res: ServerResponse, error: unknown): RetouchError {
  const domain = toRetouchError(error);
  if (!res.headersSent) sendJson(res, domain.status, trpcErrorResponse(domain), domain.headers());
  else res.destroy();
  return domain;
}

export function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    "Content-Type": "text/html; charset=utf-8",
    "Content-Length": Buffer.byteLength(html),
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "Referrer-Policy": "no-referrer",
  });
  res.end(html);
}
