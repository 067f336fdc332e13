import { RetouchError, type Services, toRetouchError } from "@retouch/core";
import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { createDiscoveryRoutes } from "../discovery/discovery.handler";
import { createMcpHandler, MCP_PATH } from "../mcp/mcp.handler";
import { createOAuthRoutes, mountOAuthCors, oauthRefusal } from "../oauth/oauth.routes";
import { createVerifyEmailPage, VERIFY_EMAIL_PATH } from "../pages/verify-email.page";
import { BodyBudget } from "./body-budget";
import { mountDashboard } from "./dashboard";
import { createEdge, type Refusal } from "./edge";
import { createEventsHandler, PROCESS_EVENTS_PATH } from "./events.handler";
import { FILES_PREFIX, serveSignedFile } from "./files.handler";
import { mountOperations, routeLabel } from "./operations.handler";
import type { HttpEnv } from "./request-context";
import { errorResponse, jsonResponse, trpcRefusal } from "./responses";
import { createRestHandler } from "./rest.handler";
import { createRoutePolicies, NO_BODY, type Surface, TRPC_ENDPOINT } from "./route-policy";
import { apiCors, securityHeaders } from "./security";
import { createStripeWebhookHandler, STRIPE_WEBHOOK_PATH } from "./stripe-webhook.handler";
import { createTrpcHandler } from "./trpc.handler";

export interface HttpAppOptions {
  /** The built dashboard to serve at `/`; undefined: a page saying how to build it. */
  dashboardDir: string | undefined;
  /** True once the server is shutting down (/healthz and /readyz answer 503). */
  draining(): boolean;
  /**
   * "operations": only /healthz, /readyz and /metrics, behind the same edge
   * (a worker's listener on PORT); default: the whole service.
   */
  routes?: "all" | "operations";
}

/**
 * The whole HTTP surface as one Hono app: middleware for what every response
 * gets (request id, log line, security headers) and for the API's CORS; then
 * the edge, one middleware in front of every route, that checks credentials
 * and reads the body by the route's policy (none declared: no body at all);
 * then the routes; the dashboard last, so it only answers what nothing else
 * did.
 */
export function createHttpApp(services: Services, options: HttpAppOptions): Hono<HttpEnv> {
  const { config, logger, metrics } = services;
  const policies = createRoutePolicies(config);
  const budget = new BodyBudget({
    authenticatedBytes: config.maxBodyBytesInFlight,
    publicBytes: config.publicBodyBytesInFlight,
    perAddressBytes: config.bodyBytesPerAddress,
  });
  metrics.collectBodyAllowanceFrom(() => budget.allowance());
  const rest = createRestHandler(services);
  const trpc = createTrpcHandler(services);
  const mcp = createMcpHandler(services);
  const refusals: Record<Surface, Refusal> = {
    rest: (_c, error: RetouchError) => errorResponse(error),
    trpc: (_c, error) => trpcRefusal(error),
    mcp: mcp.refuse,
    oauth: oauthRefusal,
  };

  // Trailing slashes are the same path, as they were before the move (`/api/keys/`).
  const app = new Hono<HttpEnv>({ strict: false });

  // Generated here, never taken from the client: it names this server's log line.
  app.use(requestId({ headerName: "" }));
  app.use(async (c, next) => {
    const started = performance.now();
    const outgoing = c.env.outgoing;
    // Logged when the response is over (a streamed file included). Only method, path and outcome: never
    // headers, query strings or bodies (they carry credentials).
    outgoing.once("close", () => {
      const elapsed = performance.now() - started;
      const ms = Math.round(elapsed);
      metrics.httpRequestDuration.observe(
        { method: c.req.method, route: routeLabel(c), status: String(outgoing.statusCode) },
        elapsed / 1000,
      );
      logger.info(
        { requestId: c.var.requestId, method: c.req.method, path: c.req.path, status: outgoing.statusCode, ms },
        "request",
      );
    });
    await next();
    // After the handler, so that a Response built by an adapter gets it too; set on the response itself (as
    // hono/secure-headers does) rather than through c.header, which would wrap the finished response again and
    // turn its body into a stream that @hono/node-server then writes chunk by chunk.
    c.res.headers.set("X-Request-Id", c.var.requestId);
  });
  app.use(securityHeaders(config));
  const cors = apiCors(config);
  if (cors) for (const prefix of ["/api/*", `${TRPC_ENDPOINT}/*`, `${FILES_PREFIX}*`]) app.use(prefix, cors);
  mountOAuthCors(app);
  // After CORS, so that its refusals carry the CORS headers a browser app needs to read them.
  // A worker's listener knows no route of the service: every request gets the smallest policy (no credentials
  // checked, no body), so nothing there says which routes the API has.
  const policyOf = options.routes === "operations" ? () => NO_BODY : policies.policyOf;
  app.use(createEdge(services, { policyOf, refusals, budget }));

  mountOperations(app, services, options);
  if (options.routes === "operations") {
    // A worker's listener: nothing of the service itself, not even its documents.
    return finish(app, logger);
  }
  app.route("/", createDiscoveryRoutes(services));
  app.get(VERIFY_EMAIL_PATH, createVerifyEmailPage(services, { dashboard: options.dashboardDir !== undefined }));
  app.get(`${FILES_PREFIX}*`, (c) => serveSignedFile(services, c));

  for (const route of policies.rest) app.on(route.method, route.path, rest);
  app.get(PROCESS_EVENTS_PATH, createEventsHandler(services));
  app.all(`${TRPC_ENDPOINT}/*`, trpc);
  // The OAuth authorization server for MCP clients: its metadata documents and better-auth's protocol endpoints.
  app.route("/", createOAuthRoutes(services));
  app.post(MCP_PATH, mcp.serve);
  app.post(STRIPE_WEBHOOK_PATH, createStripeWebhookHandler(services));
  app.all(MCP_PATH, () =>
    jsonResponse(
      405,
      { code: "method_not_allowed", message: "The MCP endpoint takes POST (stateless Streamable HTTP)." },
      { Allow: "POST" },
    ),
  );

  mountDashboard(app, { dir: options.dashboardDir, publicBaseUrl: config.publicBaseUrl });
  return finish(app, logger);
}

/** What every app ends with: the not-found answer and the last word on unhandled errors. */
function finish(app: Hono<HttpEnv>, logger: Services["logger"]): Hono<HttpEnv> {
  app.notFound((c) => errorResponse(new RetouchError("not_found", `No route for ${c.req.method} ${c.req.path}.`)));
  app.onError((error, c) => {
    const domain = toRetouchError(error);
    if (domain.status >= 500) logger.error({ err: error, requestId: c.var.requestId }, "unhandled error");
    return errorResponse(domain);
  });
  return app;
}
