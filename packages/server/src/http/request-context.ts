import type { IncomingMessage } from "node:http";
import { type Context, createContext, type Principal, type RequestInfo, type Services } from "@retouch/core";

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

/** Per request, built once: the edge authenticates from these headers, and the context reuses them. */
const requestInfos = new WeakMap<IncomingMessage, RequestInfo>();
/** The caller the edge authenticated, for the context (so the procedure does not authenticate again). */
const principals = new WeakMap<IncomingMessage, Principal>();

export function requestInfo(services: Services, req: IncomingMessage): RequestInfo {
  let info = requestInfos.get(req);
  if (!info) {
    info = { headers: toWebHeaders(req), ip: clientIp(req, services.config.trustProxy) };
    requestInfos.set(req, info);
  }
  return info;
}

export function setRequestPrincipal(req: IncomingMessage, principal: Principal): void {
  principals.set(req, principal);
}

/** The HTTP context: the pure context filled from a Node request, with the caller the edge resolved. */
export function createHttpContext(services: Services, req: IncomingMessage): Context {
  return createContext(services, requestInfo(services, req), principals.get(req));
}
