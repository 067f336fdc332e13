import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { RetouchError, type Services } from "@retouch/core";
import { createHttpApp } from "./http-app";

/**
 * Refused sockets left open at once for their clients to read the 503 (and
 * to send their request, which is discarded); past these, a refused socket
 * is closed as soon as its answer is handed to the kernel, so a flood holds
 * few descriptors beyond the cap (env.ts keeps these out of the default cap).
 * Only when the process has no descriptor left at all does a connection go
 * unanswered (libuv then accepts and closes it).
 */
const REFUSALS_AT_ONCE = 64;
/** How long a refused socket may take to read its answer before it is closed anyway. */
const REFUSAL_LINGER_MS = 2_000;
const REFUSAL_RETRY_AFTER_SECONDS = 5;

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
  /** "operations": a worker's listener, serving only /healthz, /readyz and /metrics. */
  routes?: "all" | "operations";
}

/**
 * A complete HTTP answer written on a raw socket, before Node's HTTP parser
 * is given it: the spec's error shape, `Retry-After`, and a close.
 */
function refusalBytes(error: RetouchError): Buffer {
  const body = JSON.stringify(error.toBody());
  return Buffer.from(
    [
      "HTTP/1.1 503 Service Unavailable",
      "Content-Type: application/json; charset=utf-8",
      `Content-Length: ${Buffer.byteLength(body)}`,
      `Retry-After: ${REFUSAL_RETRY_AFTER_SECONDS}`,
      "Cache-Control: no-store",
      "X-Content-Type-Options: nosniff",
      "Connection: close",
      "",
      body,
    ].join("\r\n"),
  );
}

/**
 * Serves the Hono app (http-app.ts) on Node's HTTP server through
 * @hono/node-server. What stays at this level is what belongs to the
 * connection rather than to a request: the connection caps (in all and per
 * socket address: a flood of idle connections would otherwise take every
 * file descriptor, and then the database and blob files fail), the header,
 * keep-alive and idle timeouts, counting requests in flight for a graceful
 * close, `Connection: close` while draining, and `Expect: 100-continue`.
 */
export async function startHttpServer(services: Services, options: HttpServerOptions): Promise<HttpServer> {
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;
  const app = createHttpApp(services, {
    dashboardDir: options.dashboardDir,
    draining: () => draining,
    ...(options.routes ? { routes: options.routes } : {}),
  });
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
  // Node checks the header and request deadlines on this period; its default (30 s) would let a slow sender overstay them.
  const server = createServer({ connectionsCheckingInterval: 1_000 }, onRequest);
  // `Expect: 100-continue` requests come here too: the edge decides on the headers, then sends 100 Continue only
  // to bodies it will read, so a refused upload is never sent at all.
  server.on("checkContinue", onRequest);
  const { config, logger } = services;
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  server.headersTimeout = config.headersTimeoutMs;
  server.requestTimeout = 120_000;
  // A connection silent both ways (a client that stopped reading its answer included) is closed.
  server.timeout = config.socketIdleTimeoutMs;
  admitConnections(server, config, logger);
  logger.info(
    {
      maxConnections: config.maxConnections,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress || "off",
      headersTimeoutMs: config.headersTimeoutMs,
    },
    "connection limits",
  );

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
      // Progress streams would otherwise hold the drain until the timeout: they end now, and their clients resume.
      services.jobEvents.closeAll();
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

/**
 * Puts the connection caps in front of Node's HTTP parser: a connection over
 * the total cap, or over its address's, is answered 503 (with Retry-After)
 * on the raw socket and closed, rather than reset or left to take a file
 * descriptor the database needs. The per-address count is by socket address:
 * behind a proxy that is the proxy's (env.ts turns it off with trust-proxy).
 */
function admitConnections(server: Server, config: Services["config"], logger: Services["logger"]): void {
  const parse = server.listeners("connection") as Array<(socket: Socket) => void>;
  server.removeAllListeners("connection");
  const perAddress = new Map<string, number>();
  let admitted = 0;
  let lingering = 0;
  let lastWarning = 0;
  const refuse = (socket: Socket, reason: string) => {
    socket.on("error", () => {});
    const now = Date.now();
    // One line a minute at most: a flood must not flood the log too.
    if (now - lastWarning > 60_000) {
      lastWarning = now;
      logger.warn({ admitted, limit: config.maxConnections, address: socket.remoteAddress }, reason);
    }
    const answer = refusalBytes(
      new RetouchError("service_unavailable", `${reason}; retry in a few seconds.`, {
        retryAfterSeconds: REFUSAL_RETRY_AFTER_SECONDS,
      }),
    );
    if (lingering >= REFUSALS_AT_ONCE) {
      socket.end(answer, () => socket.destroy());
      return;
    }
    // The request is never read: the answer goes first, then the socket half-closes and drains
    // what the client sends (closing with unread data would reset the connection before it reads the answer).
    lingering++;
    socket.once("close", () => lingering--);
    socket.end(answer);
    socket.resume();
    socket.setTimeout(REFUSAL_LINGER_MS, () => socket.destroy());
  };
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "";
    const fromAddress = perAddress.get(address) ?? 0;
    if (admitted >= config.maxConnections) return refuse(socket, "The server has too many open connections");
    if (config.maxConnectionsPerAddress > 0 && fromAddress >= config.maxConnectionsPerAddress) {
      return refuse(socket, "Too many open connections from your address");
    }
    admitted++;
    perAddress.set(address, fromAddress + 1);
    // Node's headers timeout starts with a request's first byte: a connection that never sends one
    // would hold its place until the idle timeout. It gets the headers timeout too.
    const silent = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, config.headersTimeoutMs);
    silent.unref();
    socket.once("close", () => {
      clearTimeout(silent);
      admitted--;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
    for (const listener of parse) listener.call(server, socket);
  });
}
