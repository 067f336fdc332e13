import {
  type Config,
  type CredentialKind,
  MCP_PATH,
  type MultipartForm,
  type ProcedureMeta,
  routerOperations,
} from "@retouch/core";
import { TrieRouter } from "hono/router/trie-router";
import { OAUTH_ENDPOINTS_PREFIX } from "../oauth/oauth.routes";
import { PROCESS_EVENTS_PATH } from "./events.handler";
import { OPERATIONS_PATHS } from "./operations.handler";
import { STRIPE_WEBHOOK_BODY_LIMIT_BYTES, STRIPE_WEBHOOK_PATH } from "./stripe-webhook.handler";

/** Largest body of an operation that carries no images. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * OAuth's token, revoke, authorize and consent requests carry a few hundred
 * bytes (a code, a 43-128 character PKCE verifier, a redirect URI, a client
 * id, scopes): 16 KiB is some 30 times that.
 */
export const OAUTH_BODY_LIMIT_BYTES = 16 * 1024;
/**
 * A dynamic client registration (RFC 7591) is a few KiB at most: redirect
 * URIs, a name, a few URLs and lists. 64 KiB leaves ten times that.
 */
export const OAUTH_REGISTRATION_BODY_LIMIT_BYTES = 64 * 1024;
/** Where the typed endpoint of the SDK is mounted: `/trpc/<procedure>`. */
export const TRPC_ENDPOINT = "/trpc";

/** The ways into the service; each renders the edge's refusals in its own format. */
export type Surface = "rest" | "trpc" | "mcp" | "oauth";
/** The body formats a route accepts (415 for any other). */
export type BodyType = "json" | "form" | "multipart";

/** What the edge checks before any handler sees the request. */
export interface RoutePolicy {
  surface: Surface;
  /** Credentials checked from the headers before the body is read; "public" means none at the edge. */
  auth: "public" | CredentialKind;
  /** Largest body accepted (413 above it); 0: the route takes no body at all. */
  maxBodyBytes: number;
  bodyTypes: readonly BodyType[];
  /** How a `multipart/form-data` body is read (with "multipart" in `bodyTypes`): the operation's own declaration. */
  multipart?: MultipartForm;
}

/**
 * Every route that has not declared a policy: no credentials at the edge, and
 * no body at all (413, unread). A new route is never unbounded by accident:
 * it takes a body only once it is given a policy here.
 */
export const NO_BODY: RoutePolicy = { surface: "rest", auth: "public", maxBodyBytes: 0, bodyTypes: [] };

/** A REST operation as the host routes it: Hono's path syntax (`/api/keys/:id`) and its policy. */
export interface RestRoute {
  method: string;
  path: string;
  policy: RoutePolicy;
}

type PolicyEntry = RoutePolicy | ((path: string) => RoutePolicy);

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);
const JSON_ONLY: readonly BodyType[] = ["json"];
const JSON_OR_MULTIPART: readonly BodyType[] = ["json", "multipart"];

/**
 * The one table of what every route accepts, looked up by the edge for every
 * request (a global middleware, not one per route): the router's operations
 * from the procedures' own metadata (who may call it, whether its body
 * carries images), so a new operation needs no entry here; the MCP endpoint;
 * better-auth's OAuth endpoints. Anything else gets NO_BODY.
 */
export function createRoutePolicies(config: Pick<Config, "maxRequestBytes">) {
  const procedures = routerOperations();
  const byName = new Map(procedures.map((procedure) => [procedure.path, procedure.meta]));
  const bodyLimit = (method: string, meta: ProcedureMeta) =>
    !BODY_METHODS.has(method) ? 0 : meta.imageBody ? config.maxRequestBytes : DEFAULT_BODY_LIMIT_BYTES;
  const rest: RestRoute[] = procedures.flatMap(({ meta }) =>
    meta.openapi
      ? [
          {
            method: meta.openapi.method,
            path: meta.openapi.path.replace(/\{([^/}]+)\}/g, ":$1"),
            policy: {
              surface: "rest",
              auth: meta.auth ?? "public",
              maxBodyBytes: bodyLimit(meta.openapi.method, meta),
              ...(meta.multipart ? { bodyTypes: JSON_OR_MULTIPART, multipart: meta.multipart } : { bodyTypes: JSON_ONLY }),
            },
          },
        ]
      : [],
  );
  // Tool calls carry images. A pk_ key, or an OAuth access token issued for /mcp.
  const mcp: RoutePolicy = {
    surface: "mcp",
    auth: "key_or_mcp_token",
    maxBodyBytes: config.maxRequestBytes,
    bodyTypes: JSON_ONLY,
  };

  /**
   * A tRPC call (`/trpc/a` or batched, `/trpc/a,b?batch=1`) is checked for
   * the strictest credentials its procedures share: none at the edge if any is
   * public (each procedure's middleware decides), a key if any needs one.
   * Unknown names are left to tRPC's 404.
   */
  function trpc(pathname: string): RoutePolicy {
    const metas = pathname
      .slice(TRPC_ENDPOINT.length + 1)
      .split(",")
      .map((name) => byName.get(name));
    const auth = metas.some((meta) => !meta || (meta.auth ?? "public") === "public")
      ? "public"
      : metas.some((meta) => meta?.auth === "api_key")
        ? "api_key"
        : "key_or_session";
    // A large body only from a caller the edge has authenticated.
    const maxBodyBytes =
      auth !== "public" && metas.some((meta) => meta?.imageBody) ? config.maxRequestBytes : DEFAULT_BODY_LIMIT_BYTES;
    return { surface: "trpc", auth, maxBodyBytes, bodyTypes: JSON_ONLY };
  }

  // better-auth reads each of these bodies whole: the edge reads them instead, small, and hands it the checked text.
  // Token and revocation requests are forms (RFC 6749, 7009); better-auth takes JSON too.
  const oauth = (maxBodyBytes: number, bodyTypes: readonly BodyType[]): RoutePolicy => ({
    surface: "oauth",
    auth: "public",
    maxBodyBytes,
    bodyTypes,
  });
  const oauthForm = oauth(OAUTH_BODY_LIMIT_BYTES, ["form", "json"]);

  const table = new TrieRouter<PolicyEntry>();
  for (const route of rest) table.add(route.method, route.path, route.policy);
  table.add("ALL", `${TRPC_ENDPOINT}/*`, trpc);
  // The progress stream: an API key, or the dashboard's session (its playground follows its own jobs); no body.
  table.add("GET", PROCESS_EVENTS_PATH, { surface: "rest", auth: "key_or_session", maxBodyBytes: 0, bodyTypes: [] });
  table.add("POST", MCP_PATH, mcp);
  // Stripe's events: no credentials (the signature is checked over the body), a small JSON body, the public budget.
  table.add("POST", STRIPE_WEBHOOK_PATH, {
    surface: "rest",
    auth: "public",
    maxBodyBytes: STRIPE_WEBHOOK_BODY_LIMIT_BYTES,
    bodyTypes: JSON_ONLY,
  });
  for (const endpoint of ["authorize", "token", "revoke", "consent"]) {
    table.add("POST", `${OAUTH_ENDPOINTS_PREFIX}/${endpoint}`, oauthForm);
  }
  table.add("POST", `${OAUTH_ENDPOINTS_PREFIX}/register`, oauth(OAUTH_REGISTRATION_BODY_LIMIT_BYTES, JSON_ONLY));
  // Probes and scrapes: no credentials at the edge (/metrics checks its own token), never a body.
  for (const path of OPERATIONS_PATHS) table.add("ALL", path, NO_BODY);
  // Refusals on OAuth's other paths (a NUL in GET /authorize's query) answer in OAuth's vocabulary too.
  table.add("ALL", `${OAUTH_ENDPOINTS_PREFIX}/*`, oauth(0, []));

  /** The policy of a request: the first entry that matches it, or NO_BODY. HEAD is GET's. */
  function policyOf(method: string, path: string): RoutePolicy {
    const normalized = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
    const [matches] = table.match(method === "HEAD" ? "GET" : method, normalized);
    const entry = matches[0]?.[0];
    if (!entry) return NO_BODY;
    return typeof entry === "function" ? entry(normalized) : entry;
  }

  return { rest, policyOf };
}

export type RoutePolicies = ReturnType<typeof createRoutePolicies>;
