import { AsyncLocalStorage } from "node:async_hooks";
import { cimd } from "@better-auth/cimd";
import {
  type ClientMetadataResourceFetch,
  getOAuthProviderApi,
  type OAuthProviderApi,
  oauthProvider,
} from "@better-auth/oauth-provider";
import type { BetterAuthPlugin } from "better-auth";
import { APIError, createAuthEndpoint, createAuthMiddleware, isAPIError } from "better-auth/api";
import { z } from "zod";
import { guardedFetch } from "../lib/outbound-http";
import type { RateDecision } from "../stores/rate-limits.store";
import { checkClientMetadata } from "./client-metadata.policy";

/** The MCP endpoint's path; `{PUBLIC_BASE_URL}/mcp` is the one resource OAuth tokens are issued for (RFC 8707). */
export const MCP_PATH = "/mcp";
/** Using the MCP tools on the account: edit images (spends credits), read its jobs. */
export const MCP_SCOPE = "mcp";
/** Asks for a refresh token (better-auth issues one only with this scope). */
export const OFFLINE_ACCESS_SCOPE = "offline_access";
export const OAUTH_SCOPES = [MCP_SCOPE, OFFLINE_ACCESS_SCOPE];

/**
 * Prefixes of the opaque tokens, so a credential tells what it is at a glance
 * (and to secret scanners): `pk_` is an API key, `mcp_at_` an OAuth access
 * token, good only on /mcp.
 */
export const MCP_ACCESS_TOKEN_PREFIX = "mcp_at_";
export const MCP_REFRESH_TOKEN_PREFIX = "mcp_rt_";

/** Dashboard client routes the authorization endpoint sends a person to. */
export const OAUTH_LOGIN_PAGE = "/sign-in";
export const OAUTH_CONSENT_PAGE = "/oauth/consent";
/** Where a person lands when an app's request cannot go back to the app (an unknown app, a redirect it never registered). */
export const OAUTH_ERROR_PAGE = "/oauth/error";

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

/**
 * How client metadata documents are fetched unless a test says otherwise: through core's outbound guard
 * (network-guard.ts, the one list of inside addresses for webhooks, image URLs and these), https only,
 * resolved once, pinned to the checked address, redirects not followed.
 */
export const defaultClientMetadataFetch: ClientMetadataResourceFetch = (input, init) =>
  guardedFetch(input, init, { allowInsecure: false });

/**
 * Fetches of metadata documents the whole process may start per minute. It is a ceiling for a flood from
 * many addresses; each address has its own, much smaller share (`RETOUCH_OAUTH_CLIENT_METADATA_RATE_LIMIT`),
 * so one cannot spend it for everyone (the plugin's default, 120, was one burst from one address).
 */
export const CLIENT_METADATA_FETCHES_PER_MINUTE = 1200;

/** The address of the client whose request better-auth is handling, when the host says it (see `withClientAddress`). */
const clientAddressScope = new AsyncLocalStorage<string>();

/**
 * Runs `handle` (the host's call of `auth.handler`) knowing the client's address, as the host worked it out
 * (socket, or X-Forwarded-For behind a trusted proxy): per-address limits inside better-auth's plugins use it.
 */
export function withClientAddress<T>(address: string, handle: () => T): T {
  return clientAddressScope.run(address, handle);
}

export interface McpOAuthPluginOptions {
  /** For tests: how MCP clients' metadata documents are fetched (by default over the public internet only). */
  fetchClientMetadata?: ClientMetadataResourceFetch | undefined;
  /** Told why a fetched metadata document was refused (the client's mistake: a warning). */
  onRefusedDocument?: (url: string, reason: string) => void;
  /** Counts one request naming a metadata document URL against the address's share (the shared rate-limit store). */
  limitClientMetadataRequest?: (address: string) => Promise<RateDecision>;
}

export function mcpResource(publicBaseUrl: string): string {
  return `${publicBaseUrl}${MCP_PATH}`;
}

/**
 * The authorization server for MCP clients: better-auth's OAuth 2.1 provider
 * (`@better-auth/oauth-provider`), configured for one protected resource.
 *
 * - Opaque access tokens (`disableJwtPlugin`): the resource server is this
 *   same process, so a token is checked by one indexed lookup of its hash, and
 *   revoking a connected app or signing out ends its tokens at once (a JWT
 *   would live until it expires, and would need signing keys to keep).
 * - Every token is bound to `{PUBLIC_BASE_URL}/mcp` through the RFC 8707
 *   `resource` parameter: new clients are linked to that resource alone, and
 *   /mcp accepts only tokens whose audience it is.
 * - Open dynamic client registration (RFC 7591), limited per address by the
 *   host with the shared rate-limit store (better-auth's in-memory limiter is
 *   off, see auth.ts); PKCE with S256 is required of every client. What a
 *   client may register is checked by a hook on the endpoint
 *   (client-metadata.policy.ts).
 * - Client ID Metadata Documents (`@better-auth/cimd`, the way the MCP
 *   authorization spec prefers): a client whose `client_id` is an https URL
 *   needs no registration; the document there (its name, its redirect URIs)
 *   is fetched at authorization, validated against the MCP profile, cached as
 *   its HTTP caching headers allow, and fetches are paced per client, per
 *   origin, per client address (a hook, in the shared store) and overall.
 *   `fetchClientMetadata` is the network boundary: by default core's own
 *   outbound guard, which resolves the host once, refuses any non-public
 *   address, pins the connection to the checked one and never follows a
 *   redirect; each document then meets the registration rules.
 */
export function mcpOAuthPlugins(publicBaseUrl: string, options: McpOAuthPluginOptions = {}) {
  const fetchClientMetadata = options.fetchClientMetadata ?? defaultClientMetadataFetch;
  const resource = mcpResource(publicBaseUrl);
  const provider = oauthProvider({
    scopes: OAUTH_SCOPES,
    loginPage: OAUTH_LOGIN_PAGE,
    consentPage: OAUTH_CONSENT_PAGE,
    disableJwtPlugin: true,
    // Confidential clients' secrets are kept encrypted (with the auth secret): without the JWT plugin, better-auth can only encrypt them.
    storeClientSecret: "encrypted",
    storeTokens: "hashed",
    prefix: { opaqueAccessToken: MCP_ACCESS_TOKEN_PREFIX, refreshToken: MCP_REFRESH_TOKEN_PREFIX },
    accessTokenExpiresIn: ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenExpiresIn: REFRESH_TOKEN_TTL_SECONDS,
    // A retried refresh (a network blip after the server rotated the token) gets the same answer, as MCP clients need.
    refreshTokenReuseInterval: 30,
    grantTypes: ["authorization_code", "refresh_token"],
    allowDynamicClientRegistration: true,
    allowUnauthenticatedClientRegistration: true,
    clientRegistrationDefaultScopes: OAUTH_SCOPES,
    resources: [resource],
    clientRegistrationDefaultResources: [resource],
    enforcePerClientResources: true,
    // Per address, in the shared store, by the host: see oauth.routes.ts.
    rateLimit: { token: false, authorize: false, introspect: false, revoke: false, register: false, userinfo: false },
  });
  const clientMetadataDocuments = cimd({
    fetchClientMetadataResource: withCheckedClientMetadata(fetchClientMetadata, options.onRefusedDocument),
    metadataProfile: "mcp-2026-07-28",
    metadataFetchPolicy: { maximumFetchesPerMinute: CLIENT_METADATA_FETCHES_PER_MINUTE },
  });
  return [
    provider,
    clientMetadataDocuments,
    registrationPolicy(),
    clientMetadataBudget(options),
    mcpTokenVerifier(provider.options),
  ] as const;
}

/** A `client_id` that is a metadata document's URL (the plugin fetches those; registered ids are opaque). */
function metadataDocumentClientId(ctx: { query?: unknown; body?: unknown }): string | undefined {
  for (const source of [ctx.query, ctx.body]) {
    const clientId = (source as { client_id?: unknown } | undefined)?.client_id;
    if (typeof clientId === "string" && clientId.startsWith("https://")) return clientId;
  }
  return undefined;
}

/**
 * Each client address's share of metadata document fetches, counted before
 * the plugin spends its global budget: every OAuth request naming an https
 * `client_id` counts (a cached document too: the plugin's cache is not
 * visible from here, and a real client makes a few such requests per
 * connection). Past the share: 429 `temporarily_unavailable` with
 * Retry-After. The address is the host's (`withClientAddress`: the socket's,
 * or a trusted proxy's X-Forwarded-For); a call without one (in-process, no
 * client) meets only the global ceiling.
 */
function clientMetadataBudget(options: McpOAuthPluginOptions) {
  const limit = options.limitClientMetadataRequest;
  return {
    id: "retouch-client-metadata-budget",
    hooks: {
      before: [
        {
          matcher: (context) => limit !== undefined && (context.path?.startsWith("/oauth2/") ?? false),
          handler: createAuthMiddleware(async (ctx) => {
            if (!limit || !metadataDocumentClientId(ctx)) return;
            const address = clientAddressScope.getStore();
            if (!address) return;
            const decision = await limit(address);
            if (!decision.allowed) {
              throw new APIError(
                "TOO_MANY_REQUESTS",
                {
                  error: "temporarily_unavailable",
                  error_description:
                    "Too many requests for apps known by a URL from this address; retry after the time given in Retry-After.",
                },
                { "Retry-After": String(decision.retryAfterSeconds) },
              );
            }
          }),
        },
      ],
    },
  } satisfies BetterAuthPlugin;
}

/** better-auth's path (under the auth base path) of dynamic client registration. */
const REGISTER_PATH = "/oauth2/register";

/**
 * Retouch's rules for what a client registers (client-metadata.policy.ts),
 * before better-auth's own checks: a hook on the endpoint itself, so they hold
 * however the route is mounted or called. Refusals are RFC 7591 §3.2.2 errors,
 * in better-auth's own shape (400, `error`, `error_description`).
 */
function registrationPolicy() {
  return {
    id: "retouch-client-registration-policy",
    hooks: {
      before: [
        {
          matcher: (context) => context.path === REGISTER_PATH,
          handler: createAuthMiddleware(async (ctx) => {
            const refusal = checkClientMetadata(ctx.body);
            if (refusal) {
              throw new APIError("BAD_REQUEST", { error: refusal.error, error_description: refusal.description });
            }
          }),
        },
      ],
    },
  } satisfies BetterAuthPlugin;
}

/**
 * The same rules for a Client ID Metadata Document, applied to the document
 * as fetched. The plugin turns any failure of its transport into one generic
 * `invalid_client`, so a refused document is answered to it as a 422 (the
 * authorization request is refused); `onRefused` says why, for the operator.
 */
export function withCheckedClientMetadata(
  fetchResource: ClientMetadataResourceFetch,
  onRefused: (url: string, reason: string) => void = () => {},
): ClientMetadataResourceFetch {
  return async (input, init) => {
    const response = await fetchResource(input, init);
    if (response.status !== 200) return response;
    // The transport and the plugin cap the size; the document is small JSON (jwks_uri answers pass through unchanged).
    const text = await response.text();
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      document = undefined;
    }
    const isClientDocument =
      typeof document === "object" && document !== null && ("redirect_uris" in document || "client_name" in document);
    const refusal = isClientDocument ? checkClientMetadata(document) : undefined;
    if (refusal) {
      onRefused(input instanceof Request ? input.url : String(input), `${refusal.error}: ${refusal.description}`);
      return new Response(null, { status: 422 });
    }
    return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

type ProviderOptions = ReturnType<typeof oauthProvider>["options"];

/** An access token as the MCP endpoint needs to know it (from the RFC 7662 introspection payload). */
export interface McpTokenCheck {
  active: boolean;
  /** The user's id. */
  sub?: string | undefined;
  /** The resources the token was issued for (its `aud`). */
  audience?: string[];
  scopes?: string[];
  clientId?: string | undefined;
  /** DPoP-bound (`cnf`): usable only with a proof of possession. */
  senderConstrained?: boolean;
}

/**
 * A server-only endpoint (never routed over HTTP) through which the MCP
 * surface checks an access token in-process with the provider's own
 * validation: hash lookup, expiry, revocation, the client still enabled, the
 * session it came from still alive. Answers the RFC 7662 introspection shape.
 */
function mcpTokenVerifier(options: ProviderOptions) {
  return {
    id: "retouch-mcp-token-verifier",
    endpoints: {
      verifyMcpAccessToken: createAuthEndpoint(
        "/retouch/verify-mcp-access-token",
        { method: "POST", body: z.object({ token: z.string() }), metadata: { SERVER_ONLY: true } },
        async (ctx) => {
          let payload: Awaited<ReturnType<OAuthProviderApi["validateAccessToken"]>>;
          try {
            payload = await getOAuthProviderApi(ctx, options).validateAccessToken(ctx.body.token);
          } catch (error) {
            // Unknown or malformed: as inactive as an expired one. Anything else (the database) is a real failure.
            if (isAPIError(error)) return { active: false } satisfies McpTokenCheck;
            throw error;
          }
          return {
            active: payload.active === true,
            sub: payload.sub,
            audience: payload.aud === undefined ? [] : ([] as string[]).concat(payload.aud),
            scopes: typeof payload.scope === "string" ? payload.scope.split(" ") : [],
            clientId: typeof payload.client_id === "string" ? payload.client_id : undefined,
            senderConstrained: payload.cnf !== undefined,
          } satisfies McpTokenCheck;
        },
      ),
    },
  } satisfies BetterAuthPlugin;
}
