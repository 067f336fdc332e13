import { authenticate, isClientError, RetouchError, type Services, toRetouchError } from "@retouch/core";
import type { MiddlewareHandler } from "hono";
import { isJsonContentType, readBody } from "./body";
import type { BodyBudget } from "./body-budget";
import { checkJson, checkQuery } from "./json-guard";
import { type HttpContext, type HttpEnv, requestInfo } from "./request-context";
import type { RoutePolicy } from "./route-policy";
import { createSameOriginCheck } from "./security";

function carriesBody(method: string): boolean {
  return method !== "GET" && method !== "HEAD" && method !== "DELETE" && method !== "OPTIONS";
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RetouchError("invalid_json", `The request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** How a surface answers a request the edge refused: the REST error shape, tRPC's envelope, or JSON-RPC. */
export type Refusal = (c: HttpContext, error: RetouchError) => Response;

/**
 * The edge: everything the host checks before an adapter sees a request for
 * the router, as a middleware in front of each surface, cheapest first, so
 * that a request that will be refused costs neither memory nor a body read:
 * 0. a state-changing request riding on the session cookie comes from this
 *    service's own pages (403 `cross_site_request`; see security.ts);
 * 1. credentials, from the headers alone (401; the principal then rides on
 *    the context, so the procedure does not look the key up again);
 * 2. text in the query string (and a tRPC query's `input`);
 * 3. the content type (415), the declared size (413) and room in the body
 *    budget (503), all before the first byte of the body;
 * 4. the body, read once from Node's request (413/503 as it streams; `100
 *    Continue` only for a body it will read), parsed once (400 `invalid_json`)
 *    and walked once for depth and unstorable text (400).
 * The body is then `c.var.body`. Not hono/body-limit: the limit here depends on
 * the route, and the budget, `Expect: 100-continue` and the refusal's format
 * on the surface, none of which it knows.
 */
export function createEdge(services: Services, budget: BodyBudget) {
  const logger = services.logger;
  const checkOrigin = createSameOriginCheck(services.config);

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
    if (!carriesBody(c.req.method)) return;
    const { incoming, outgoing } = c.env;
    if (!isJsonContentType(incoming)) throw new RetouchError("unsupported_media_type");
    const bytes = await readBody(incoming, outgoing, { limitBytes: policy.maxBodyBytes, budget });
    if (!bytes) return;
    const text = bytes.toString("utf8");
    const value = parseJson(text);
    checkJson(value);
    c.set("body", { text, value });
  }

  return (refuse: Refusal, policyOf: RoutePolicy | ((c: HttpContext) => RoutePolicy)): MiddlewareHandler<HttpEnv> =>
    async (c, next) => {
      try {
        await admit(c, typeof policyOf === "function" ? policyOf(c) : policyOf);
      } catch (error) {
        const domain = toRetouchError(error);
        const response = refuse(c, domain);
        // A body left unread stays unread: closing the connection tells the client to stop sending it.
        if (!c.env.incoming.complete) response.headers.set("Connection", "close");
        if (domain.code === "service_unavailable") logger.warn({ bodyBytesInFlight: budget.usedBytes }, "body budget full");
        else if (!isClientError(domain)) logger.error({ err: error }, "request refused at the edge");
        return response;
      }
      await next();
    };
}
