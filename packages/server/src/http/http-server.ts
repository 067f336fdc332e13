import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { Services } from "@retouch/core";
import { createHttpApp } from "./http-app";

export interface HttpServer {
  server: Server;
  /** The base URL the server actually listens on (useful with port 0). */
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to the timeout), then closes every connection. */
  close(timeoutMs: number): Promise<void>;
}

export interface HttpServerOptions {
  host: string;
  port: number;
  /** The built dashboard to serve at `/` (packages/web/dist); without it `/` says how to build one. */
  dashboardDir?: string | undefined;
}

/**
 * Serves the Hono app (http-app.ts) on Node's HTTP server through
 * @hono/node-server. What stays at this level is what belongs to the
 * connection rather than to a request: counting requests in flight for a
 * graceful close, `Connection: close` while draining, and `Expect:
 * 100-continue`.
 */
export async function startHttpServer(services: Services, options: HttpServerOptions): Promise<HttpServer> {
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;
  const app = createHttpApp(services, { dashboardDir: options.dashboardDir, draining: () => draining });
  // The edge reads bodies from Node's request itself and closes the connection under a body it refused,
  // so the adapter's own clean-up of unread bodies stays off (Node discards what a kept-alive request left).
  const listener = getRequestListener(app.fetch, { autoCleanupIncoming: false });

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    inFlight++;
    res.once("close", () => {
      inFlight--;
      if (draining && inFlight === 0) drained?.();
    });
    if (draining) res.setHeader("Connection", "close");
    void listener(req, res);
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
  const logger = services.logger;

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
