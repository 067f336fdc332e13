import { kyselyAdapter } from "@better-auth/kysely-adapter";
import type { ClientMetadataResourceFetch } from "@better-auth/oauth-provider";
import { betterAuth } from "better-auth";
import { isAPIError } from "better-auth/api";
import type { Config } from "../config/env";
import type { Db } from "../db/database";
import { type IdPrefix, newId } from "../lib/ids";
import type { Logger } from "../lib/logger";
import type { RateDecision } from "../stores/rate-limits.store";
import { mcpOAuthPlugins, OAUTH_ERROR_PAGE } from "./mcp-oauth.plugin";
import { withHashedSessionTokens } from "./session-token-hashing.adapter";

export const AUTH_BASE_PATH = "/auth";
export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 256;

const COOKIE_PREFIX = "retouch";

/** The dashboard's page that takes the emailed reset token (`/reset-password?token=...`). */
export const RESET_PASSWORD_PAGE = "/reset-password";
/** How long a password reset link works. */
export const RESET_PASSWORD_TOKEN_TTL_SECONDS = 3600;

/** The session cookie's name: `retouch.session_token`, `__Secure-` prefixed behind https. */
export function sessionCookieName(publicBaseUrl: string): string {
  return `${publicBaseUrl.startsWith("https:") ? "__Secure-" : ""}${COOKIE_PREFIX}.session_token`;
}

const idPrefixByModel: Record<string, IdPrefix> = {
  user: "usr",
  session: "ses",
  account: "acc",
  verification: "vrf",
  oauthClient: "ocl",
  oauthAccessToken: "oat",
  oauthRefreshToken: "ort",
  oauthConsent: "ocn",
  oauthResource: "ors",
  oauthClientResource: "ocr",
  oauthClientAssertion: "oas",
};

export interface AuthDependencies {
  db: Db;
  config: Pick<Config, "publicBaseUrl">;
  secret: string;
  logger: Logger;
  /** Called after sign-up with the link that verifies the address. */
  sendVerificationLink(user: { id: string; email: string; name: string }, link: string): Promise<void>;
  /** Called for a reset request of a registered address, with the dashboard link that carries the token. */
  sendPasswordResetLink(user: { id: string; email: string; name: string }, link: string): Promise<void>;
  /** Called after a password was set from an emailed link: whoever used it controls the address. */
  passwordWasReset(user: { id: string; email: string }): Promise<void>;
  /** For tests: how MCP clients' metadata documents are fetched (by default over the public internet only). */
  fetchClientMetadata?: ClientMetadataResourceFetch;
  /** Counts a request naming a Client ID Metadata Document against its address's share (see mcp-oauth.plugin.ts). */
  limitClientMetadataRequest?: (address: string) => Promise<RateDecision>;
}

/**
 * The emailed link: the dashboard's reset page with the token and, when the
 * request named one, where to go afterwards. better-auth's own `url` points at
 * its unmounted HTTP handler; it carries the request's `redirectTo` as `callbackURL`.
 */
function resetPasswordLink(publicBaseUrl: string, token: string, betterAuthUrl: string): string {
  const link = new URL(`${publicBaseUrl}${RESET_PASSWORD_PAGE}`);
  link.searchParams.set("token", token);
  const redirectTo = new URL(betterAuthUrl).searchParams.get("callbackURL");
  if (redirectTo) link.searchParams.set("redirect_to", redirectTo);
  return link.href;
}

/**
 * better-auth provides password hashing, sessions, cookies and the email
 * verification token. Its HTTP handler is not mounted: the services call
 * `auth.api.*` in-process, so every route stays defined once in the router.
 * The one exception is the OAuth authorization server for MCP clients
 * (mcp-oauth.plugin.ts), whose protocol endpoints the server's OAuth routes
 * hand to `auth.handler` one path at a time.
 */
export function createAuth(deps: AuthDependencies) {
  return betterAuth({
    appName: "Retouch",
    baseURL: deps.config.publicBaseUrl,
    basePath: AUTH_BASE_PATH,
    secret: deps.secret,
    database: withHashedSessionTokens(kyselyAdapter(deps.db, { type: "postgres", transaction: true })),
    emailAndPassword: {
      enabled: true,
      minPasswordLength: MIN_PASSWORD_LENGTH,
      maxPasswordLength: MAX_PASSWORD_LENGTH,
      autoSignIn: true,
      requireEmailVerification: false,
      resetPasswordTokenExpiresIn: RESET_PASSWORD_TOKEN_TTL_SECONDS,
      // Whoever held a session (perhaps the reason for the reset) is signed out everywhere.
      revokeSessionsOnPasswordReset: true,
      onPasswordReset: async ({ user }) => {
        await deps.passwordWasReset({ id: user.id, email: user.email });
      },
      sendResetPassword: async ({ user, url, token }) => {
        await deps.sendPasswordResetLink(
          { id: user.id, email: user.email, name: user.name },
          resetPasswordLink(deps.config.publicBaseUrl, token, url),
        );
      },
    },
    // Reset tokens are kept as hashes, like session tokens: a database dump holds no working link.
    verification: { storeIdentifier: "hashed" },
    emailVerification: {
      sendOnSignUp: true,
      expiresIn: 3 * 24 * 3600,
      // Never: the link is a bearer credential anyone can send to anyone, so opening it from another site would
      // sign the visitor's browser into the sender's account (login CSRF). It only verifies; see AccountsService.verifyEmail.
      autoSignInAfterVerification: false,
      sendVerificationEmail: async ({ user, url }) => {
        await deps.sendVerificationLink({ id: user.id, email: user.email, name: user.name }, url);
      },
    },
    advanced: {
      // better-auth skips its Origin check when NODE_ENV is "test": tests then run what production runs.
      disableOriginCheck: false,
      cookiePrefix: COOKIE_PREFIX,
      useSecureCookies: deps.config.publicBaseUrl.startsWith("https:"),
      // better-auth's default, stated because the host's CSRF defence builds on it: a cross-site POST carries no
      // session cookie; the host's Origin check covers same-site (sibling subdomain) pages and old browsers.
      defaultCookieAttributes: { sameSite: "lax", httpOnly: true },
      database: { generateId: ({ model }) => newId(idPrefixByModel[model] ?? "usr") },
    },
    plugins: [
      ...mcpOAuthPlugins(deps.config.publicBaseUrl, {
        fetchClientMetadata: deps.fetchClientMetadata,
        // The client's mistake, not ours: a warning, for whoever asks why an app cannot connect.
        onRefusedDocument: (url, reason) => deps.logger.warn({ clientId: url, reason }, "client metadata document refused"),
        limitClientMetadataRequest: deps.limitClientMetadataRequest,
      }),
    ],
    // The dashboard's page, instead of better-auth's own /auth/error, which the host does not serve.
    onAPIError: {
      errorURL: `${deps.config.publicBaseUrl}${OAUTH_ERROR_PAGE}`,
      // better-auth would log every refusal (a bad registration, an unknown client) as an error: a client's
      // mistake is a warning, without a stack; only its own failures are errors.
      onError: (error) => {
        const status = isAPIError(error) ? error.statusCode : 500;
        const detail = isAPIError(error) ? (error.body as { error?: unknown; code?: unknown } | undefined) : undefined;
        if (status < 500) {
          deps.logger.warn({ component: "better-auth", status, error: detail?.error ?? detail?.code }, "request refused");
        } else deps.logger.error({ component: "better-auth", err: error }, "auth request failed");
      },
    },
    // Sign-up is rate limited by the accounts service, client registration by the OAuth routes (shared across processes, with Retry-After).
    rateLimit: { enabled: false },
    telemetry: { enabled: false },
    logger: {
      level: "warn",
      log: (level, message) => {
        const log = level === "error" ? deps.logger.error : deps.logger.warn;
        log.call(deps.logger, { component: "better-auth" }, message);
      },
    },
  });
}

export type Auth = ReturnType<typeof createAuth>;
