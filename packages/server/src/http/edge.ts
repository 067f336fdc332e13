import type { IncomingMessage, ServerResponse } from "node:http";
import { authenticate, type Principal, RetouchError, type Services } from "@retouch/core";
import { isJsonContentType, readBody } from "./body";
import type { BodyBudget } from "./body-budget";
import { checkJson, checkQuery } from "./json-guard";
import { requestInfo, setRequestPrincipal } from "./request-context";
import type { RoutePolicy } from "./route-policy";

/** What passed the edge: the caller (when the route needs one) and the body, read once and parsed once. */
export interface Admitted {
  principal: Principal | undefined;
  /** Undefined for a request without a body. `text` is what tRPC parses; `value` what everything else uses. */
  body: { text: string; value: unknown } | undefined;
}

function carriesBody(method: string | undefined): boolean {
  return method !== "GET" && method !== "HEAD" && method !== "DELETE" && method !== "OPTIONS";
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new RetouchError("invalid_json", `The request body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Everything the host checks before an adapter sees a request for the
 * router, cheapest first, so that a request that will be refused costs
 * neither memory nor a body read:
 * 1. credentials, from the headers alone (401; the principal then rides on
 *    the context, so the procedure does not look the key up again);
 * 2. text in the query string (and a tRPC query's `input`);
 * 3. the content type (415), the declared size (413) and room in the body
 *    budget (503), all before the first byte of the body;
 * 4. the body, read once (413/503 as it streams), parsed once (400
 *    `invalid_json`) and walked once for depth and unstorable text (400).
 * Throws the RetouchError the route's surface renders.
 */
export async function admit(
  services: Services,
  budget: BodyBudget,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  policy: RoutePolicy,
): Promise<Admitted> {
  let principal: Principal | undefined;
  if (policy.auth !== "public") {
    principal = await authenticate(services, requestInfo(services, req).headers, policy.auth);
    if (!principal) throw new RetouchError("unauthorized");
    setRequestPrincipal(req, principal);
  }

  checkQuery(url.searchParams);
  const queryInput = policy.surface === "trpc" ? url.searchParams.get("input") : null;
  if (queryInput !== null) checkJson(parseJson(queryInput));

  if (!carriesBody(req.method)) return { principal, body: undefined };
  if (!isJsonContentType(req)) throw new RetouchError("unsupported_media_type");
  const bytes = await readBody(req, res, { limitBytes: policy.maxBodyBytes, budget });
  if (!bytes) return { principal, body: undefined };
  const text = bytes.toString("utf8");
  const value = parseJson(text);
  checkJson(value);
  return { principal, body: { text, value } };
}
