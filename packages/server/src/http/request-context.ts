import type { IncomingMessage } from "node:http";
import { type Context, createContext, type Services } from "@retouch/core";

export function toWebHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

export function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers["x-forwarded-for"];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? "unknown";
}

/** The HTTP context: the pure context filled from a Node request. */
export function createHttpContext(services: Services, req: IncomingMessage): Context {
  return createContext(services, { headers: toWebHeaders(req), ip: clientIp(req, services.config.trustProxy) });
}
