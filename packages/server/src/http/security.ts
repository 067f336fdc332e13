import { createHash } from "node:crypto";
import { AUTH_BASE_PATH, bearerToken, type Config, RATE_LIMIT_HEADERS, RetouchError, sessionCookieName } from "@retouch/core";
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { secureHeaders } from "hono/secure-headers";
import { PAGE_STYLE } from "../pages/layout";
import type { HttpContext, HttpEnv } from "./request-context";
import { TRPC_ENDPOINT } from "./route-policy";

/**
 * Headers on every response (hono/secure-headers), and one Content-Security-Policy
 * for every page the service serves (the dashboard, the reference at /docs, the
 * small server-rendered pages): everything from this origin, no inline script, no
 * framing, no `<base>`, forms only to this origin. The server-rendered pages'
 * one inline `<style>` is allowed by its hash, nothing else inline is.
 * Handlers may set their own value of a header first (`overwrite: false`): result
 * files say `Cross-Origin-Resource-Policy: cross-origin`, since a signed link is
 * meant to be embedded anywhere.
 */
export function securityHeaders(config: Pick<Config, "publicBaseUrl">): MiddlewareHandler<HttpEnv> {
  const pageStyle = `'sha256-${createHash("sha256").update(PAGE_STYLE).digest("base64")}'`;
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'", pageStyle],
      imgSrc: ["'self'", "data:", "blob:"],
      connectSrc: ["'self'"],
      objectSrc: ["'none'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
    },
    xFrameOptions: "DENY",
    // Not "no-referrer": under it a browser sends `Origin: null` on the dashboard's own POSTs (Fetch spec,
    // "serializing a request origin"), which the same-origin check must refuse. "same-origin" still keeps
    // paths, and the signed result links on them, from other sites.
    referrerPolicy: "same-origin",
    // Only where browsers heed it (https); without includeSubDomains, which would bind hosts this service does not own.
    strictTransportSecurity: config.publicBaseUrl.startsWith("https:") ? "max-age=15552000" : false,
    // Headers for browsers and plug-ins of the past (IE's download prompt and XSS auditor, Flash, DNS prefetch) or
    // already the default (Origin-Agent-Cluster): bytes on every response, no protection today.
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
    originAgentCluster: false,
    overwrite: false,
  });
}

/** Request headers a browser app may send cross-origin: its key, JSON, a retry key; tRPC's streaming links add trpc-accept. */
const CORS_ALLOWED_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "trpc-accept"];
/** Response headers it may read: the request id to quote, when to retry after a 429 or 503, and a submission's limits. */
const CORS_EXPOSED_HEADERS = ["X-Request-Id", "Retry-After", ...Object.keys(RATE_LIMIT_HEADERS)];

/**
 * CORS for the API (REST, tRPC, result files) for exactly the configured
 * origins (hono/cors). Never `Access-Control-Allow-Credentials`: a page on
 * another origin calls with an API key; the session cookie is for this
 * service's own pages only. Undefined when no origin is configured: then no
 * CORS header is ever sent and preflights meet the usual 404.
 */
export function apiCors(config: Pick<Config, "corsOrigins">): MiddlewareHandler<HttpEnv> | undefined {
  if (config.corsOrigins.length === 0) return undefined;
  return cors({
    origin: config.corsOrigins,
    allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    allowHeaders: CORS_ALLOWED_HEADERS,
    exposeHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 600,
    credentials: false,
  });
}

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

function hasCookie(header: string | undefined, name: string): boolean {
  return (header ?? "").split(";").some((pair) => pair.trim().startsWith(`${name}=`));
}

/**
 * The CSRF defence, beside the session cookie's SameSite=Lax: a state-changing
 * request that a browser could send with the session cookie must come from this
 * service's own pages. That is every such request carrying the cookie without a
 * bearer key (a key is never sent by a browser on its own), and every call of
 * the account flows (REST under /auth, tRPC's `auth.*`: sign-up, sign-in,
 * password reset set the cookie, so a foreign page must not sign a visitor into
 * an account it chose).
 *
 * Where the request comes from is read from what browsers send: `Origin` (this
 * service's origin is PUBLIC_BASE_URL's, or the origin the request was addressed
 * to, which a page on another origin cannot claim); without it `Sec-Fetch-Site`;
 * without that `Referer`. A request with none of them is not from a browser
 * (curl, the SDK and the CLI resend the cookie as the spec describes) and passes:
 * browsers have sent `Origin` on every cross-origin POST for years, and the
 * SameSite cookie is not sent on one anyway.
 */
export function createSameOriginCheck(config: Pick<Config, "publicBaseUrl">) {
  const publicOrigin = new URL(config.publicBaseUrl).origin;
  const cookieName = sessionCookieName(config.publicBaseUrl);
  const authPrefix = `${AUTH_BASE_PATH}/`;
  /** The account flows that set or end the session: REST under /auth, tRPC's `auth.*` (alone or in a batch). */
  const authProcedure = new RegExp(`^${TRPC_ENDPOINT}/(?:[^/]*,)?auth\\.`);
  const touchesSession = (path: string) => path.startsWith(authPrefix) || authProcedure.test(path);

  /** True, false, or undefined when the request says nothing about where it comes from. */
  function fromOwnPages(c: HttpContext): boolean | undefined {
    const own = (origin: string) => origin === publicOrigin || origin === new URL(c.req.url).origin;
    const origin = c.req.header("origin");
    // "null" (a sandboxed or privacy-sensitive context) is never this service's pages.
    if (origin !== undefined) return own(origin);
    const site = c.req.header("sec-fetch-site");
    if (site !== undefined) return site === "same-origin";
    const referer = c.req.header("referer");
    if (referer !== undefined) return URL.canParse(referer) && own(new URL(referer).origin);
    return undefined;
  }

  /** Throws `cross_site_request` (403) for a request that must come from this service's pages and does not. */
  return (c: HttpContext): void => {
    if (!STATE_CHANGING.has(c.req.method)) return;
    const cookieAuthenticated = !bearerToken(c.req.header("authorization")) && hasCookie(c.req.header("cookie"), cookieName);
    if (!cookieAuthenticated && !touchesSession(c.req.path)) return;
    if (fromOwnPages(c) === false) throw new RetouchError("cross_site_request");
  };
}
