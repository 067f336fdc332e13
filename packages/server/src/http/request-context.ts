import type { IncomingMessage } from "node:http";
import type { HttpBindings } from "@hono/node-server";
import { type Context, createContext, type Principal, type RequestInfo, type Services } from "@retouch/core";
import type { Context as HonoContext } from "hono";

/** What a request carries from one middleware to the next. */
export interface HttpVariables {
  /** Set by hono/request-id for every request; sent back as `X-Request-Id` and written in its log line. */
  requestId: string;
  /** Headers and client address, built once: the edge authenticates from them and the context reuses them. */
  requestInfo: RequestInfo;
  /** The caller the edge authenticated, for the context (so the procedure does not authenticate again). */
  principal: Principal | undefined;
  /** The body the edge read and checked; undefined for a request without one. */
  body: { text: string; value: unknown } | undefined;
}

/** The host's Hono environment: Node's request and response underneath (the edge reads bodies from them). */
export interface HttpEnv {
  Bindings: HttpBindings;
  Variables: HttpVariables;
}

export type HttpContext = HonoContext<HttpEnv>;

/**
 * The client's address: the socket's, or behind a trusted proxy the LAST
 * `X-Forwarded-For` entry, the one that proxy appended. Entries before it
 * were sent by the client and say whatever it likes: taking the first would
 * let anyone pick a fresh address for every request and slip past every
 * per-address limit.
 */
export function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers["x-forwarded-for"];
    const last = (Array.isArray(forwarded) ? forwarded.join(",") : forwarded)?.split(",").at(-1)?.trim();
    if (last) return last;
  }
  return req.socket.remoteAddress ?? "unknown";
}

export function requestInfo(services: Services, c: HttpContext): RequestInfo {
  let info = c.get("requestInfo");
  if (!info) {
    info = { headers: c.req.raw.headers, ip: clientIp(c.env.incoming, services.config.trustProxy) };
    c.set("requestInfo", info);
  }
  return info;
}

/** The HTTP context: the pure context filled from the request, with the caller the edge resolved. */
export function createHttpContext(services: Services, c: HttpContext): Context {
  return createContext(services, requestInfo(services, c), c.get("principal"));
}
