import { AUTH_BASE_PATH, MCP_PATH, type RetouchError, type Services, toRetouchError } from "@retouch/core";
import { type Context, Hono } from "hono";
import { cors } from "hono/cors";
import { clientIp, type HttpContext, type HttpEnv } from "../http/request-context";
import { jsonResponse } from "../http/responses";

/** RFC 9728: where an MCP client learns which authorization server guards /mcp. */
export const PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";
/** RFC 8414: the authorization server's metadata. */
export const AUTHORIZATION_SERVER_METADATA_PATH = "/.well-known/oauth-authorization-server";
/** better-auth's OAuth provider endpoints, under the auth base path. */
export const OAUTH_ENDPOINTS_PREFIX = `${AUTH_BASE_PATH}/oauth2`;

type Env = HttpEnv;

const PROTECTED_RESOURCE_METADATA_PATHS = [PROTECTED_RESOURCE_METADATA_PATH, `${PROTECTED_RESOURCE_METADATA_PATH}${MCP_PATH}`];
// The issuer is `{PUBLIC_BASE_URL}/auth`: RFC 8414 puts its document at the path-suffixed form; clients that only try the root find it there too.
const AUTHORIZATION_SERVER_METADATA_PATHS = [
  AUTHORIZATION_SERVER_METADATA_PATH,
  `${AUTHORIZATION_SERVER_METADATA_PATH}${AUTH_BASE_PATH}`,
];

/**
 * The machine-facing documents and endpoints answer any origin (no cookies
 * there), so MCP clients running in a browser can use them. The host mounts
 * this before its edge, so that the edge's refusals there carry it too.
 */
export function mountOAuthCors(app: Hono<Env>): void {
  const anyOrigin = cors({ origin: "*", allowMethods: ["GET", "POST", "OPTIONS"], maxAge: 86_400 });
  const paths = [
    ...PROTECTED_RESOURCE_METADATA_PATHS,
    ...AUTHORIZATION_SERVER_METADATA_PATHS,
    ...["token", "register", "revoke"].map((endpoint) => `${OAUTH_ENDPOINTS_PREFIX}/${endpoint}`),
  ];
  for (const path of paths) app.use(path, anyOrigin);
}

/** The `WWW-Authenticate` challenge /mcp answers 401 with: where the protected-resource metadata is. */
export function mcpBearerChallenge(publicBaseUrl: string, error?: "invalid_token"): string {
  const metadata = `${publicBaseUrl}${PROTECTED_RESOURCE_METADATA_PATH}${MCP_PATH}`;
  return `Bearer resource_metadata="${metadata}"${error ? `, error="${error}"` : ""}`;
}

/**
 * The OAuth 2.1 authorization server for MCP clients over HTTP, as a Hono
 * app the host mounts at the root. The protocol itself is better-auth's OAuth
 * provider (packages/core/src/auth/mcp-oauth.plugin.ts); this app publishes
 * the metadata documents, limits client registration per address with the
 * shared rate-limit store, and hands each protocol endpoint, and only those,
 * to better-auth's handler:
 *
 * - `GET|POST /auth/oauth2/authorize`: a person not signed in is sent to the
 *   dashboard's /sign-in, then to its /oauth/consent page;
 * - `POST /auth/oauth2/token`: authorization code (PKCE S256) and refresh;
 * - `POST /auth/oauth2/register`: dynamic client registration (RFC 7591);
 * - `POST /auth/oauth2/revoke`: a client gives a token back (RFC 7009);
 * - `GET /auth/oauth2/public-client` and `POST /auth/oauth2/consent`: what
 *   the consent page shows and sends, with the session cookie.
 *
 * The machine-facing documents and endpoints answer any origin (no cookies
 * there; see mountOAuthCors), so MCP clients running in a browser can use them.
 *
 * better-auth never reads Node's stream: the host's edge has read the body
 * (small limits, see route-policy.ts), checked it, and each handler gets a
 * Request rebuilt from that text.
 */
export function createOAuthRoutes(services: Services): Hono<Env> {
  const app = new Hono<Env>();
  // better-auth runs knowing the client's address as the host works it out (socket, or a trusted proxy's
  // X-Forwarded-For): the per-address share of metadata-document fetches is counted inside its plugin.
  const handle = (c: Context<Env>, body: string | undefined) =>
    services.mcpOAuth.handle(fromEdge(c, body), clientIp(c.env.incoming, services.config.trustProxy));
  const toBetterAuth = (c: Context<Env>) => handle(c, c.var.body?.text);

  const protectedResource = async (c: Context<Env>) =>
    c.json(await services.mcpOAuth.protectedResourceMetadata(), 200, { "Cache-Control": "public, max-age=3600" });
  const authorizationServer = async (c: Context<Env>) =>
    c.json(await services.mcpOAuth.authorizationServerMetadata(), 200, { "Cache-Control": "public, max-age=3600" });

  for (const path of PROTECTED_RESOURCE_METADATA_PATHS) app.get(path, protectedResource);
  for (const path of AUTHORIZATION_SERVER_METADATA_PATHS) app.get(path, authorizationServer);

  app.on(["GET", "POST"], `${OAUTH_ENDPOINTS_PREFIX}/authorize`, toBetterAuth);
  app.post(`${OAUTH_ENDPOINTS_PREFIX}/token`, toBetterAuth);
  app.post(`${OAUTH_ENDPOINTS_PREFIX}/revoke`, toBetterAuth);
  app.post(`${OAUTH_ENDPOINTS_PREFIX}/register`, async (c) => {
    try {
      await services.mcpOAuth.limitRegistration({
        headers: c.req.raw.headers,
        ip: clientIp(c.env.incoming, services.config.trustProxy),
      });
    } catch (error) {
      return oauthRefusal(c, toRetouchError(error));
    }
    return handle(c, asNativeWhereLoopback(c.var.body));
  });
  app.get(`${OAUTH_ENDPOINTS_PREFIX}/public-client`, toBetterAuth);
  app.post(`${OAUTH_ENDPOINTS_PREFIX}/consent`, toBetterAuth);
  return app;
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The request as better-auth should see it: the same URL, method and headers, and the body the edge read. */
function fromEdge(c: Context<Env>, body: string | undefined): Request {
  const request = c.req.raw;
  if (body === undefined)
    return new Request(request.url, { method: request.method, headers: request.headers, signal: request.signal });
  const headers = new Headers(request.headers);
  // The new body's own length, not the client's framing.
  headers.delete("content-length");
  headers.delete("transfer-encoding");
  return new Request(request.url, { method: request.method, headers, body, signal: request.signal });
}

/**
 * MCP clients on a person's machine (Claude Code, the MCP Inspector, the
 * SDK's examples) register `http://localhost:<port>/callback` and no
 * `application_type`. better-auth applies OpenID DCR's default, "web", which
 * forbids loopback redirects, and would refuse them all. A registration that
 * names no type and only loopback redirect URIs is the native app of RFC
 * 8252 §7.3 (what loopback redirects exist for): it is passed on as one.
 * Anything else goes through untouched, and better-auth checks it all.
 */
function asNativeWhereLoopback(body: { text: string; value: unknown } | undefined): string | undefined {
  const metadata = body?.value;
  if (!body || !metadata || typeof metadata !== "object" || "application_type" in metadata) return body?.text;
  const redirects = (metadata as { redirect_uris?: unknown }).redirect_uris;
  const loopbackOnly =
    Array.isArray(redirects) &&
    redirects.length > 0 &&
    redirects.every((uri) => {
      const url = URL.parse(String(uri));
      return url?.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
    });
  return loopbackOnly ? JSON.stringify({ ...metadata, application_type: "native" }) : body.text;
}

/**
 * A refusal in both vocabularies: Retouch's `code` and `message`, and OAuth's
 * `error` and `error_description` (RFC 6749 §5.2), which OAuth clients read.
 * The edge answers its refusals on OAuth's paths with it too.
 */
export function oauthRefusal(_c: HttpContext, error: RetouchError): Response {
  const body = { ...error.toBody(), error: error.code, error_description: error.message };
  return jsonResponse(error.status, body, error.headers());
}
