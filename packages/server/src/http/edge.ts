import { authenticate, isClientError, type Logger, RetouchError, type Services, toRetouchError } from "@retouch/core";
import type { MiddlewareHandler } from "hono";
import { announcesBody, isJsonContentType, mediaType, readBody } from "./body";
import type { BodyBudget } from "./body-budget";
import { checkJson, checkQuery, createJsonDepthScanner } from "./json-guard";
import { readMultipartBody } from "./multipart-body";
import { clientIp, type HttpContext, type HttpEnv, requestInfo } from "./request-context";
import { type BodyType, DEFAULT_BODY_LIMIT_BYTES, type RoutePolicy, type Surface } from "./route-policy";
import { createSameOriginCheck } from "./security";

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RetouchError("invalid_json", `The request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** How a surface answers a request the edge refused: the REST error shape, tRPC's envelope, JSON-RPC, or OAuth's. */
export type Refusal = (c: HttpContext, error: RetouchError) => Response;

export interface EdgeOptions {
  /** The policy of a request (route-policy.ts's one table; NO_BODY for a route that declared none). */
  policyOf(method: string, path: string): RoutePolicy;
  refusals: Record<Surface, Refusal>;
  budget: BodyBudget;
}

function bodyTypeOf(c: HttpContext): BodyType | undefined {
  if (isJsonContentType(c.env.incoming)) return "json";
  const type = mediaType(c.env.incoming);
  if (type === "application/x-www-form-urlencoded") return "form";
  if (type === "multipart/form-data") return "multipart";
  return undefined;
}

function unsupportedType(accepted: readonly BodyType[]): RetouchError {
  if (accepted.includes("multipart")) {
    return new RetouchError(
      "unsupported_media_type",
      "Send the body as JSON (`Content-Type: application/json`) or as `multipart/form-data` with the picture as a file part (curl -F image=@photo.jpg).",
    );
  }
  if (accepted.includes("form")) {
    return new RetouchError(
      "unsupported_media_type",
      "Send the body as `application/x-www-form-urlencoded` or JSON (`Content-Type: application/json`).",
    );
  }
  return new RetouchError("unsupported_media_type");
}

/**
 * The edge: one middleware in front of EVERY route (the router's, the MCP
 * endpoint, better-auth's OAuth endpoints, documents, signed files, the
 * dashboard), which looks the request's policy up in one table, so that a
 * route without one gets the smallest limits (no body at all). Cheapest
 * first, so that a request that will be refused costs neither memory nor a
 * body read:
 * 0. a state-changing request riding on the session cookie comes from this
 *    service's own pages (403 `cross_site_request`; see security.ts);
 * 1. credentials, from the headers alone (401; the principal then rides on
 *    the context, so the procedure does not look the key up again);
 * 2. text in the query string (and a tRPC query's `input`);
 * 3. a body on a route that takes none (413), the content type (415), the
 *    declared size (413) and room in the body budget (503), all before the
 *    first byte of the body;
 * 4. the body, read once from Node's request (413/503 as it streams, 408 when
 *    it stalls, 400 as soon as its JSON nests too deep; `100 Continue` only
 *    for a body it will read), parsed once (400 `invalid_json`) and walked
 *    once for depth and unstorable text (400); its share of the budget is then
 *    given back.
 * The body is then `c.var.body`: handlers never read Node's stream. Not
 * hono/body-limit: the limit depends on the route, and the budget,
 * `Expect: 100-continue` and the refusal's format on the surface.
 */
export function createEdge(services: Services, options: EdgeOptions): MiddlewareHandler<HttpEnv> {
  const { logger, config } = services;
  const { policyOf, refusals, budget } = options;
  const checkOrigin = createSameOriginCheck(config);

  async function admit(c: HttpContext, policy: RoutePolicy): Promise<void> {
    checkOrigin(c);
    if (policy.auth !== "public") {
      const principal = await authenticate(services, requestInfo(services, c).headers, policy.auth);
      if (!principal) throw new RetouchError("unauthorized");
      c.set("principal", principal);
    }

    const params = new URL(c.req.url).searchParams;
    checkQuery(params);
    const queryInput = policy.surface === "trpc" ? params.get("input") : null;
    if (queryInput !== null) checkJson(parseJson(queryInput));

    c.set("body", undefined);
    const { incoming, outgoing } = c.env;
    if (!announcesBody(incoming)) return;
    if (policy.maxBodyBytes === 0) {
      throw new RetouchError("payload_too_large", `${c.req.method} ${c.req.path} takes no request body.`);
    }
    const type = bodyTypeOf(c);
    if (!type || !policy.bodyTypes.includes(type)) throw unsupportedType(policy.bodyTypes);

    const share = budget.open(policy.auth === "public" ? "public" : "authenticated", clientIp(incoming, config.trustProxy));
    try {
      if (type === "multipart" && policy.multipart) {
        // Streamed part by part, under the same limits; the operation then sees the JSON body it always sees.
        const value = await readMultipartBody(incoming, outgoing, {
          limitBytes: policy.maxBodyBytes,
          share,
          idleTimeoutMs: config.bodyIdleTimeoutMs,
          form: policy.multipart,
          maxFileBytes: config.maxImageBytes,
        });
        if (!value) return;
        checkJson(value);
        // Nothing reads a multipart body's text but a tRPC adapter, which never gets one: made only if asked.
        c.set("body", {
          get text() {
            return JSON.stringify(value);
          },
          value,
        });
        return;
      }
      const bytes = await readBody(incoming, outgoing, {
        limitBytes: policy.maxBodyBytes,
        share,
        idleTimeoutMs: config.bodyIdleTimeoutMs,
        // Small JSON bodies are checked for depth as they arrive; large ones (images) once parsed, below.
        inspect: type === "json" && policy.maxBodyBytes <= DEFAULT_BODY_LIMIT_BYTES ? createJsonDepthScanner() : undefined,
      });
      if (!bytes) return;
      const text = bytes.toString("utf8");
      if (type === "form") {
        const fields = new URLSearchParams(text);
        checkQuery(fields, "form field");
        c.set("body", { text, value: fields });
        return;
      }
      const value = parseJson(text);
      checkJson(value);
      c.set("body", { text, value });
    } finally {
      // Read and parsed (or refused): the request holds none of the budget while its handler runs or waits.
      share.release();
    }
  }

  return async (c, next) => {
    const policy = policyOf(c.req.method, c.req.path);
    try {
      await admit(c, policy);
    } catch (error) {
      const domain = toRetouchError(error);
      const response = refusals[policy.surface](c, domain);
      // A body left unread stays unread: closing the connection tells the client to stop sending it.
      if (!c.env.incoming.complete) response.headers.set("Connection", "close");
      logRefusal(logger, c, domain, error);
      return response;
    }
    await next();
  };

  function logRefusal(log: Logger, c: HttpContext, domain: RetouchError, error: unknown): void {
    // A client's mistake (or a full budget) is a warning, without a stack: clients must not be able to write errors.
    const line = { requestId: c.var.requestId, method: c.req.method, path: c.req.path, status: domain.status, code: domain.code };
    // Missing credentials and cross-site requests are everyday traffic: the request's own log line says all there is.
    if (domain.code === "unauthorized" || domain.code === "cross_site_request") return;
    if (domain.code === "service_unavailable") log.warn({ ...line, bodyBytesInFlight: budget.usedBytes }, "body budget full");
    else if (isClientError(domain)) log.warn(line, `refused at the edge: ${domain.message}`);
    else log.error({ ...line, err: error }, "request refused at the edge");
  }
}
