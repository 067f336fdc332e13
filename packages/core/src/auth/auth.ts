import { kyselyAdapter } from "@better-auth/kysely-adapter";
import { betterAuth } from "better-auth";
import type { Config } from "../config/env";
import type { Db } from "../db/database";
import { type IdPrefix, newId } from "../lib/ids";
import type { Logger } from "../lib/logger";
import { withHashedSessionTokens } from "./session-token-hashing.adapter";

export const AUTH_BASE_PATH = "/auth";
export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 256;

const COOKIE_PREFIX = "retouch";

/** The session cookie's name: `retouch.session_token`, `__Secure-` prefixed behind https. */
export function sessionCookieName(publicBaseUrl: string): string {
  return `${publicBaseUrl.startsWith("https:") ? "__Secure-" : ""}${COOKIE_PREFIX}.session_token`;
}

const idPrefixByModel: Record<string, IdPrefix> = { user: "usr", session: "ses", account: "acc", verification: "vrf" };

export interface AuthDependencies {
  db: Db;
  config: Pick<Config, "publicBaseUrl">;
  secret: string;
  logger: Logger;
  /** Called after sign-up with the link that verifies the address. */
  sendVerificationLink(user: { id: string; email: string; name: string }, link: string): Promise<void>;
}

/**
 * better-auth provides password hashing, sessions, cookies and the email
 * verification token. Its HTTP handler is not mounted: the services call
 * `auth.api.*` in-process, so every route stays defined once in the router.
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
    },
    emailVerification: {
      sendOnSignUp: true,
      expiresIn: 3 * 24 * 3600,
      // The emailed link lands the person in the dashboard signed in (the host sends the session cookie on).
      autoSignInAfterVerification: true,
      sendVerificationEmail: async ({ user, url }) => {
        await deps.sendVerificationLink({ id: user.id, email: user.email, name: user.name }, url);
      },
    },
    advanced: {
      cookiePrefix: COOKIE_PREFIX,
      useSecureCookies: deps.config.publicBaseUrl.startsWith("https:"),
      // better-auth's default, stated because the host's CSRF defence builds on it: a cross-site POST carries no
      // session cookie; the host's Origin check covers same-site (sibling subdomain) pages and old browsers.
      defaultCookieAttributes: { sameSite: "lax", httpOnly: true },
      database: { generateId: ({ model }) => newId(idPrefixByModel[model] ?? "usr") },
    },
    // Sign-up is rate limited by the accounts service (shared across processes, with Retry-After).
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
