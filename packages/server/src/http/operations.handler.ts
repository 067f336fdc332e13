import { bearerToken, RetouchError, type Services } from "@retouch/core";
import type { Hono } from "hono";
import { matchedRoutes } from "hono/route";
import type { HttpContext, HttpEnv } from "./request-context";
import { jsonResponse } from "./responses";

/** Operators' endpoints, on every role that listens (a worker with PORT set serves only these). */
export const HEALTHZ_PATH = "/healthz";
export const READYZ_PATH = "/readyz";
export const METRICS_PATH = "/metrics";
export const OPERATIONS_PATHS = [HEALTHZ_PATH, READYZ_PATH, METRICS_PATH] as const;

/** How soon an orchestrator or load balancer should ask again when not ready. */
const NOT_READY_RETRY_AFTER_SECONDS = 5;

/**
 * /healthz: the process is alive and not shutting down; it touches nothing
 * else, so a database outage never gets a live process restarted.
 * /readyz: the database and the blob store answer (each check bounded), and
 * the process is not draining: 503 with Retry-After otherwise, naming the
 * check that failed but not why (the log says why; the caller is anyone).
 * /metrics: the Prometheus exposition, for the bearer of RETOUCH_METRICS_TOKEN.
 * None of them takes a body (route-policy.ts gives them none) or is cached.
 */
export function mountOperations(app: Hono<HttpEnv>, services: Services, options: { draining(): boolean }): void {
  const noStore = { "Cache-Control": "no-store" };
  app.get(HEALTHZ_PATH, () =>
    options.draining() ? jsonResponse(503, { ok: false }, noStore) : jsonResponse(200, { ok: true }, noStore),
  );
  app.get(READYZ_PATH, async () => {
    const readiness = await services.operations.readiness();
    const draining = options.draining();
    if (readiness.ready && !draining) return jsonResponse(200, { ok: true, checks: readiness.checks }, noStore);
    const failed = Object.entries(readiness.checks)
      .filter(([, state]) => state !== "ok")
      .map(([name]) => name);
    const error = new RetouchError(
      "service_unavailable",
      draining ? "Not ready: the server is shutting down." : `Not ready: the ${failed.join(" and the ")} cannot be reached.`,
      { retryAfterSeconds: NOT_READY_RETRY_AFTER_SECONDS },
    );
    return jsonResponse(503, { ...error.toBody(), ok: false, checks: readiness.checks }, { ...error.headers(), ...noStore });
  });
  app.get(METRICS_PATH, async (c) => {
    try {
      services.operations.authorizeScrape(bearerToken(c.req.header("authorization")));
    } catch (error) {
      // RFC 6750's challenge, so a scraper's log says what is missing.
      if (error instanceof RetouchError && error.code === "unauthorized") {
        const challenge = c.req.header("authorization")
          ? 'Bearer realm="metrics", error="invalid_token"'
          : 'Bearer realm="metrics"';
        return jsonResponse(401, error.toBody(), { "WWW-Authenticate": challenge, ...noStore });
      }
      throw error;
    }
    const { contentType, text } = await services.metrics.scrape();
    return new Response(text, { headers: { "Content-Type": contentType, ...noStore } });
  });
}

/** Patterns that match every path: the global middlewares' and the dashboard's catch-all. */
const CATCH_ALL = new Set(["*", "/*"]);

/**
 * The `route` label of a request: the pattern of the most specific route
 * registered for it (`/api/keys/:id`, `/trpc/*`), never the path requested,
 * so the label takes as many values as there are routes, whatever clients
 * send; `*` for what only the catch-alls match (the dashboard, or nothing).
 * Read from Hono's match, so a request the edge refused before its route
 * ran is labelled with the route it was meant for.
 */
export function routeLabel(c: HttpContext): string {
  const patterns = matchedRoutes(c)
    .map((route) => route.path)
    .filter((path) => !CATCH_ALL.has(path));
  return patterns.at(-1) ?? "*";
}
