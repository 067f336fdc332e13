import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { RetouchError, type Services } from "@retouch/core";
import { createDiscoveryHandler } from "../discovery/discovery.handler";
import { createMcpHandler, MCP_PATH } from "../mcp/mcp.handler";
import { VERIFY_EMAIL_PATH, verifyEmailPage } from "../pages/verify-email.page";
import { DEFAULT_BODY_LIMIT_BYTES, isJsonContentType, readJsonBody } from "./body";
import { FILES_PREFIX, serveSignedFile } from "./files.handler";
import type { RequestWithBody } from "./procedure-meta";
import { sendError, sendJson } from "./responses";
import { createRestHandler } from "./rest.handler";
import { createTrpcHandler, TRPC_PREFIX } from "./trpc.handler";

export interface HttpServer {
  server: Server;
  /** The base URL the server actually listens on (useful with port 0). */
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then closes every connection. */
  close(timeoutMs: number): Promise<void>;
}

export async function startHttpServer(services: Services, options: { host: string; port: number }): Promise<HttpServer> {
  const rest = createRestHandler(services);
  const mcp = createMcpHandler(services);
  const discovery = createDiscoveryHandler(services);
  // Submissions carry images: they get their own (documented) body limit; every other route 1 MiB.
  const submissionLimit = services.config.maxRequestBytes;
  const trpc = createTrpcHandler(services, submissionLimit);
  const bodyLimit = (path: string) =>
    path === "/api/process" || path === "/trpc/process.submit" ? submissionLimit : DEFAULT_BODY_LIMIT_BYTES;
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
    if (path === MCP_PATH) {
      if (req.method === "POST") await mcp(req, res);
      else
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
    if (path.startsWith(TRPC_PREFIX)) {
      const declared = Number(req.headers["content-length"]);
      if (declared > bodyLimit(path)) {
        req.resume();
        throw new RetouchError("payload_too_large", `The request body is larger than ${bodyLimit(path)} bytes.`);
      }
      await trpc(req, res, path);
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD" && isJsonContentType(req)) {
      (req as RequestWithBody).body = await readJsonBody(req, bodyLimit(path));
    }
    await rest(req, res, () => sendError(res, new RetouchError("not_found", `No route for ${req.method} ${path}.`)));
  };

  const server = createServer((req, res) => {
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
  });
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
