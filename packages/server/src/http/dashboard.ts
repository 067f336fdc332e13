import path from "node:path";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Hono } from "hono";
import { dashboardMissingPage } from "../pages/dashboard-missing.page";
import type { HttpContext, HttpEnv } from "./request-context";
import { htmlResponse } from "./responses";

/** Vite names what it builds under assets/ by content hash: a changed file is a new URL, so these never go stale. */
const HASHED_ASSETS = `assets${path.sep}`;
const IMMUTABLE = "public, max-age=31536000, immutable";
/** index.html and the other unhashed files: always asked again (they name the current assets). */
const REVALIDATE = "no-cache";

/**
 * The first path segments of every route registered so far ("api", "trpc",
 * "mcp", "files", "auth", ".well-known", "openapi.json", "docs"...): the
 * dashboard never answers under them, so an unknown API path keeps its JSON
 * 404 even for a browser, and a new route reserves its prefix by existing.
 */
function reservedSegments(app: Hono<HttpEnv>): Set<string> {
  const segments = app.routes.map((route) => route.path.split("/")[1] ?? "");
  return new Set(segments.filter((segment) => segment !== "" && segment !== "*"));
}

/**
 * Serves the dashboard at `/`, registered after every other route: the built
 * files of `dir` (hashed `assets/*` cached for good, the rest revalidated),
 * and for a page request (GET or HEAD accepting text/html) on any other path
 * outside the reserved prefixes, index.html, so the client routes
 * (/dashboard/keys...) load the app. Without a build, the same requests (and
 * `/` from any client) get a page that says how to build it.
 */
export function mountDashboard(app: Hono<HttpEnv>, options: { dir: string | undefined; publicBaseUrl: string }): void {
  const reserved = reservedSegments(app);
  const isReserved = (requestPath: string) => reserved.has(requestPath.split("/")[1] ?? "");
  const wantsPage = (c: HttpContext) =>
    !isReserved(c.req.path) && (c.req.path === "/" || (c.req.header("accept")?.includes("text/html") ?? false));
  const { dir } = options;

  if (!dir) {
    const missing = dashboardMissingPage(options.publicBaseUrl);
    app.get("*", (c, next) => (wantsPage(c) ? htmlResponse(200, missing, { Vary: "Accept" }) : next()));
    return;
  }
  const files = serveStatic<HttpEnv>({
    root: dir,
    onFound: (file, c) => {
      c.header("Cache-Control", path.relative(dir, file).startsWith(HASHED_ASSETS) ? IMMUTABLE : REVALIDATE);
    },
  });
  const index = serveStatic<HttpEnv>({
    root: dir,
    path: "index.html",
    onFound: (_file, c) => {
      c.header("Cache-Control", REVALIDATE);
      // The same URL answers JSON to API clients (404): caches must tell the two apart.
      c.header("Vary", "Accept");
    },
  });
  app.use("*", (c, next) => (isReserved(c.req.path) ? next() : files(c, next)));
  app.get("*", (c, next) => (wantsPage(c) ? index(c, next) : next()));
}
