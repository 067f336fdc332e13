import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isClientError, RetouchError, type Services } from "@retouch/core";
import { webAssetsDirectory } from "@retouch/web";
import { createDiscoveryHandler } from "../discovery/discovery.handler";
import { createMcpHandler, MCP_PATH } from "../mcp/mcp.handler";
import { VERIFY_EMAIL_PATH, verifyEmailPage } from "../pages/verify-email.page";
import { BodyBudget } from "./body-budget";
import { type Admitted, admit } from "./edge";
import { FILES_PREFIX, serveSignedFile } from "./files.handler";
import { sendError, sendJson, sendTrpcError } from "./responses";
import { createRestHandler } from "./rest.handler";
import { createRoutePolicies, type Surface } from "./route-policy";
import { createTrpcHandler } from "./trpc.handler";

export interface HttpServer {
  server: Server;
  /** The base URL the server actually listens on (useful with port 0). */
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then closes every connection. */
  close(timeoutMs: number): Promise<void>;
}

// TEMPORARY (web branch, issue 14): serves the built dashboard (packages/web/dist) at the client routes until
// the hono branch's static serving and SPA fallback are merged. Drop this block and its call at the merge.
const DASHBOARD_ROUTES = new Set(["/", "/sign-up", "/sign-in", "/check-email", "/forgot-password", "/reset-password"]);
const DASHBOARD_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};
async function serveDashboardTemporarily(dir: string | undefined, res: ServerResponse, path: string): Promise<boolean> {
  const isRoute = DASHBOARD_ROUTES.has(path) || path === "/dashboard" || path.startsWith("/dashboard/");
  const file = isRoute ? "index.html" : /^\/(assets\/[\w.-]+|favicon\.svg)$/.exec(path)?.[1];
  const type = DASHBOARD_TYPES[file?.split(".").pop() ?? ""];
  if (!dir || !file || !type) return false;
  const body = await readFile(`${dir}/${file}`).catch(() => undefined);
  if (!body) return false;
  res.writeHead(200, {
    "Content-Type": type,
    "Cache-Control": isRoute ? "no-cache" : "public, max-age=31536000, immutable",
    // The policy the hono branch sets on pages, so the dashboard is tested under it now.
    "Content-Security-Policy":
      "default-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  });
  res.end(body);
  return true;
}

export async function startHttpServer(services: Services, options: { host: string; port: number }): Promise<HttpServer> {
  const rest = createRestHandler(services);
  const trpc = createTrpcHandler(services);
  const mcp = createMcpHandler(services);
  const discovery = createDiscoveryHandler(services);
  const policyFor = createRoutePolicies(services.config);
  const budget = new BodyBudget(services.config.maxBodyBytesInFlight);
  const dashboardDir = webAssetsDirectory(); // TEMPORARY (web branch): see serveDashboardTemporarily
  const notFound = (req: IncomingMessage, res: ServerResponse, path: string) => () =>
    sendError(res, new RetouchError("not_found", `No route for ${req.method} ${path}.`));
  /** Per surface: how a refusal before the adapter looks, and how an admitted request is served. */
  const surfaces: Record<
    Surface,
    {
      refuse(req: IncomingMessage, res: ServerResponse, error: unknown): RetouchError;
      serve(req: IncomingMessage, res: ServerResponse, path: string, admitted: Admitted): Promise<void>;
    }
  > = {
    rest: {
      refuse: (_req, res, error) => sendError(res, error),
      serve: (req, res, path, admitted) => rest(req, res, admitted.body?.value, notFound(req, res, path)),
    },
    trpc: {
      refuse: (_req, res, error) => sendTrpcError(res, error),
      serve: (req, res, path, admitted) => trpc(req, res, path, admitted.body?.text),
    },
    mcp: { refuse: mcp.refuse, serve: (req, res, _path, admitted) => mcp.serve(req, res, admitted.body?.value) },
  };
  const logger = services.logger;
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const path = url.pathname;

    if (path === "/healthz" && req.method === "GET") {
      sendJson(res, draining ? 503 : 200, { ok: !draining });
      return;
    }
    if (path === VERIFY_EMAIL_PATH && req.method === "GET") {
      await verifyEmailPage(services, req, res, url);
      return;
    }
    if (await discovery(req, res, path)) return;
    if (path === MCP_PATH && req.method !== "POST") {
      sendJson(
        res,
        405,
        { code: "method_not_allowed", message: "The MCP endpoint takes POST (stateless Streamable HTTP)." },
        { Allow: "POST" },
      );
      return;
    }
    if (path.startsWith(FILES_PREFIX) && (req.method === "GET" || req.method === "HEAD")) {
      await serveSignedFile(services, req, res, url);
      return;
    }
    if ((req.method === "GET" || req.method === "HEAD") && (await serveDashboardTemporarily(dashboardDir, res, path))) return; // TEMPORARY
    const policy = policyFor(req.method ?? "GET", path);
    if (!policy) {
      notFound(req, res, path)();
      return;
    }
    const surface = surfaces[policy.surface];
    let admitted: Admitted;
    try {
      admitted = await admit(services, budget, req, res, url, policy);
    } catch (error) {
      // A body left unread stays unread: closing the connection tells the client to stop sending it.
      if (!req.complete) res.setHeader("Connection", "close");
      const domain = surface.refuse(req, res, error);
      if (domain.code === "service_unavailable") logger.warn({ bodyBytesInFlight: budget.usedBytes }, "body budget full");
      else if (!isClientError(domain)) logger.error({ err: error }, "request refused at the edge");
      return;
    }
    await surface.serve(req, res, path, admitted);
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const requestId = randomUUID();
    res.setHeader("X-Request-Id", requestId);
    inFlight++;
    res.on("close", () => {
      inFlight--;
      // Only method, path and outcome: never headers, query strings or bodies (they carry credentials).
      logger.info(
        {
          requestId,
          method: req.method,
          path: (req.url ?? "/").split("?")[0],
          status: res.statusCode,
          ms: Math.round(performance.now() - started),
        },
        "request",
      );
      if (draining && inFlight === 0) drained?.();
    });
    if (draining) res.setHeader("Connection", "close");
    handle(req, res).catch((error: unknown) => {
      const domain = sendError(res, error);
      if (domain.status >= 500) logger.error({ err: error, requestId }, "unhandled error");
    });
  };
  const server = createServer(onRequest);
  // `Expect: 100-continue` requests come here too: the edge decides on the headers, then sends 100 Continue only
  // to bodies it will read, so a refused upload is never sent at all.
  server.on("checkContinue", onRequest);
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 30_000;
  server.requestTimeout = 120_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;

  return {
    server,
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${address.port}`,
    async close(timeoutMs: number) {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (inFlight > 0) {
        const finished = new Promise<void>((resolve) => {
          drained = resolve;
        });
        const timedOut = await Promise.race([
          finished.then(() => false),
          new Promise<boolean>((resolve) => setTimeout(() => resolve(true), timeoutMs).unref()),
        ]);
        if (timedOut) logger.warn({ inFlight }, "shutdown timeout reached; closing remaining connections");
      }
      server.closeAllConnections();
      await closed;
    },
  };
}
