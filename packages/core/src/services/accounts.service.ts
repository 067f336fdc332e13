import { isAPIError } from "better-auth/api";
import type { Auth } from "../auth/auth";
import type { Config } from "../config/env";
import { isPlanName, PLAN_LIMITS } from "../config/plans";
import { RetouchError } from "../errors/retouch-error";
import type { Logger } from "../lib/logger";
import type { JobsStore } from "../stores/jobs.store";
import type { RateLimitsStore } from "../stores/rate-limits.store";
import type { Principal, RequestInfo } from "./principal";
import type { ProfilesService } from "./profiles.service";

/**
 * Mails one address may be sent per hour, whoever asks: the per-IP limits
 * stop one client, this stops many clients (rotating addresses) from filling
 * one person's inbox. Counted for every address, registered or not, so a 429
 * here says nothing about which addresses have accounts.
 */
const MAILS_PER_RECIPIENT = { limit: 5, windowMs: 3_600_000 };

/** The rate-limit key of failed sign-ins to one account (per address is `sign-in:address:<ip>`). */
export function signInAccountKey(email: string): string {
  return `sign-in:account:${email.trim().toLowerCase()}`;
}

export interface SignUpInput {
  email: string;
  password: string;
  name: string;
}

export interface SignInInput {
  email: string;
  password: string;
}

export interface SessionResult {
  token: string;
  user: { id: string; email: string; name: string };
  /** `Set-Cookie` values carrying the session cookie. */
  setCookie: string[];
}

export interface SessionState {
  user: { id: string; email: string; name: string; email_verified: boolean };
  session: { expires_at: string };
}

export type EmailVerificationOutcome =
  /**
   * `signedIn`: the browser already holds a session of this same account (it stays in it; `setCookie` carries
   * that session's refreshed cookie, if any). Otherwise the person is asked to sign in: the link never opens a session.
   */
  | { verified: true; email: string | undefined; signedIn: boolean; setCookie: string[] }
  | { verified: false; reason: "expired" | "invalid" };

/** better-auth's error code of an APIError, if that is what was thrown. */
function authErrorCode(error: unknown): string | undefined {
  if (!isAPIError(error)) return undefined;
  const body = error.body as { code?: unknown } | undefined;
  return typeof body?.code === "string" ? body.code : undefined;
}

export class AccountsService {
  constructor(
    private readonly deps: {
      auth: Auth;
      profiles: ProfilesService;
      jobs: Pick<JobsStore, "countCharged">;
      rateLimits: RateLimitsStore;
      config: Pick<Config, "signupRateLimit" | "signInFailuresPerAddress" | "signInFailuresPerAccount">;
      logger: Logger;
    },
  ) {}

  async signUp(input: SignUpInput, request: RequestInfo): Promise<SessionResult> {
    await this.limitPerIp("sign-up", request, "Too many sign-ups from this address");
    try {
      const { headers, response } = await this.deps.auth.api.signUpEmail({
        body: { email: input.email, password: input.password, name: input.name },
        headers: request.headers,
        returnHeaders: true,
      });
      if (!response.token) throw new Error("better-auth returned no session token after sign-up");
      await this.deps.profiles.ensure(response.user.id);
      this.deps.logger.info({ userId: response.user.id }, "account created");
      return this.toSession(response.token, response.user, headers);
    } catch (error) {
      const code = authErrorCode(error);
      if (code === "USER_ALREADY_EXISTS" || code === "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL") {
        throw new RetouchError("email_already_registered");
      }
      if (code === "PASSWORD_TOO_SHORT" || code === "PASSWORD_TOO_LONG" || code === "INVALID_EMAIL") {
        throw new RetouchError("invalid_request", isAPIError(error) ? error.message : undefined);
      }
      throw error;
    }
  }

  /**
   * Failed sign-ins are limited per address and per account (sliding windows).
   * Each attempt is counted before the password is checked, so parallel
   * guesses cannot slip past the limit, and taken back unless it failed on the
   * credentials. Once throttled, even the right password gets 429: answering
   * it would tell a guesser they found it.
   */
  async signIn(input: SignInInput, request: RequestInfo): Promise<SessionResult> {
    const { signInFailuresPerAddress: perAddress, signInFailuresPerAccount: perAccount } = this.deps.config;
    const keys = [`sign-in:address:${request.ip}`, signInAccountKey(input.email)];
    const at = Date.now();
    const attempt = await this.deps.rateLimits.hitAll(
      [
        { key: keys[0] as string, limit: perAddress.count, windowMs: perAddress.windowMs },
        { key: keys[1] as string, limit: perAccount.count, windowMs: perAccount.windowMs },
      ],
      at,
    );
    if (!attempt.allowed) {
      throw new RetouchError("rate_limited", "Too many failed sign-ins; retry after the time given in Retry-After.", {
        retryAfterSeconds: attempt.retryAfterSeconds,
      });
    }
    let failedOnCredentials = false;
    try {
      const { headers, response } = await this.deps.auth.api.signInEmail({
        body: { email: input.email, password: input.password },
        headers: request.headers,
        returnHeaders: true,
      });
      return this.toSession(response.token, response.user, headers);
    } catch (error) {
      if (isAPIError(error) && error.statusCode === 401) {
        failedOnCredentials = true;
        throw new RetouchError("invalid_credentials");
      }
      throw error;
    } finally {
      if (!failedOnCredentials) {
        // Not counting it is a courtesy: a failure here must not turn a successful sign-in into an error.
        await this.deps.rateLimits.release(keys, at).catch((error: unknown) => {
          this.deps.logger.warn({ err: error }, "could not take back a sign-in attempt from its rate limits");
        });
      }
    }
  }

  /**
   * Sends a fresh verification link. Answers the same whether or not the
   * address has an unverified account, so it reveals nothing.
   */
  async resendVerification(email: string, request: RequestInfo): Promise<{ ok: true }> {
    await this.limitPerIp("verification-mail", request, "Too many verification emails requested from this address");
    await this.limitPerRecipient("verification-mail", email, "Too many verification emails for this email address");
    // No session headers: better-auth then takes its enumeration-safe path (constant time, same answer).
    await this.deps.auth.api.sendVerificationEmail({ body: { email }, headers: new Headers() });
    return { ok: true };
  }

  /** The account page: who, which plan and its limits, the balance, and the jobs charged this month (UTC). */
  async overview(principal: Principal) {
    const now = new Date();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const [profile, thisMonth] = await Promise.all([
      this.deps.profiles.get(principal.userId),
      this.deps.jobs.countCharged(principal.userId, monthStart),
    ]);
    // An unknown plan name counts as free, as the submission function does.
    const plan = isPlanName(profile.plan) ? profile.plan : "free";
    const limits = PLAN_LIMITS[plan];
    return {
      email: principal.email,
      name: principal.name,
      email_verified: principal.emailVerified,
      plan,
      credits_remaining: profile.credits,
      limits: { per_minute: limits.submissionsPerMinute, concurrent: limits.concurrentJobs },
      usage: { this_month: thisMonth },
    };
  }

  /**
   * The session the cookie carries, or null. better-auth may extend a session
   * that is used (and refresh its cookie) or expire a dead cookie: those
   * `Set-Cookie` values are passed on.
   */
  async currentSession(headers: Headers): Promise<{ state: SessionState | null; setCookie: string[] }> {
    if (!headers.get("cookie")) return { state: null, setCookie: [] };
    const { headers: responseHeaders, response } = await this.deps.auth.api.getSession({ headers, returnHeaders: true });
    const setCookie = responseHeaders.getSetCookie();
    if (!response) return { state: null, setCookie };
    const { user, session } = response;
    return {
      state: {
        user: { id: user.id, email: user.email, name: user.name, email_verified: user.emailVerified },
        session: { expires_at: new Date(session.expiresAt).toISOString() },
      },
      setCookie,
    };
  }

  /** Deletes the cookie's session (if it is live) and answers the `Set-Cookie` values that clear it in the browser. */
  async signOut(headers: Headers): Promise<{ ok: true; setCookie: string[] }> {
    const { headers: responseHeaders } = await this.deps.auth.api.signOut({ headers, returnHeaders: true });
    return { ok: true, setCookie: responseHeaders.getSetCookie() };
  }

  /**
   * Emails a reset link when the address has an account. The answer is the
   * same, and takes as long, either way (better-auth's unknown-address path
   * mimics the known one; the mail is sent after the answer), so it reveals
   * nothing about which addresses are registered.
   */
  async requestPasswordReset(
    input: { email: string; redirectTo?: string | undefined },
    request: RequestInfo,
  ): Promise<{ ok: true }> {
    await this.limitPerIp("password-reset", request, "Too many password reset requests from this address");
    await this.limitPerRecipient("password-reset", input.email, "Too many password reset emails for this email address");
    await this.deps.auth.api.requestPasswordReset({
      body: { email: input.email, ...(input.redirectTo ? { redirectTo: input.redirectTo } : {}) },
      headers: new Headers(),
    });
    return { ok: true };
  }

  /**
   * Sets the new password from an emailed token (once). better-auth revokes every session of the account
   * (revokeSessionsOnPasswordReset); `passwordWasReset` (services.ts) revokes its apps' OAuth tokens and
   * lifts the per-account sign-in lock.
   */
  async resetPassword(input: { token: string; newPassword: string }): Promise<{ ok: true }> {
    try {
      await this.deps.auth.api.resetPassword({
        body: { token: input.token, newPassword: input.newPassword },
        headers: new Headers(),
      });
    } catch (error) {
      const code = authErrorCode(error);
      if (code === "INVALID_TOKEN" || code === "USER_NOT_FOUND") throw new RetouchError("reset_token_invalid");
      if (code === "PASSWORD_TOO_SHORT" || code === "PASSWORD_TOO_LONG") {
        throw new RetouchError("invalid_request", isAPIError(error) ? error.message : undefined);
      }
      throw error;
    }
    this.deps.logger.info("password reset");
    return { ok: true };
  }

  private async limitPerIp(action: string, request: RequestInfo, message: string): Promise<void> {
    const { count, windowMs } = this.deps.config.signupRateLimit;
    const decision = await this.deps.rateLimits.hit(`${action}:${request.ip}`, { limit: count, windowMs });
    if (!decision.allowed) {
      throw new RetouchError("rate_limited", `${message}; retry after the time given in Retry-After.`, {
        retryAfterSeconds: decision.retryAfterSeconds,
      });
    }
  }

  private async limitPerRecipient(action: string, email: string, message: string): Promise<void> {
    const decision = await this.deps.rateLimits.hit(`${action}-to:${email.trim().toLowerCase()}`, MAILS_PER_RECIPIENT);
    if (!decision.allowed) {
      throw new RetouchError("rate_limited", `${message}; check your inbox (and spam folder) for the ones already sent.`, {
        retryAfterSeconds: decision.retryAfterSeconds,
      });
    }
  }

  /** The account behind a session cookie, if the headers carry a live one. */
  async sessionPrincipal(headers: Headers): Promise<Principal | undefined> {
    if (!headers.get("cookie")) return undefined;
    const session = await this.deps.auth.api.getSession({ headers });
    if (!session) return undefined;
    return {
      userId: session.user.id,
      email: session.user.email,
      name: session.user.name,
      emailVerified: session.user.emailVerified,
      via: "session",
    };
  }

  /**
   * Checks the token from a verification link and marks the address verified. It opens no session: whoever
   * holds the link (an attacker's own, sent to a victim) must not sign the browser that opens it into that
   * account. A browser already signed in to the same account stays signed in; any other is asked to sign in.
   */
  async verifyEmail(token: string, headers: Headers): Promise<EmailVerificationOutcome> {
    try {
      // No cookies passed: better-auth verifies the token alone, whoever opens it.
      await this.deps.auth.api.verifyEmail({ query: { token }, headers: new Headers() });
    } catch (error) {
      const code = authErrorCode(error);
      if (code === "TOKEN_EXPIRED") return { verified: false, reason: "expired" };
      if (isAPIError(error)) return { verified: false, reason: "invalid" };
      throw error;
    }
    const email = this.emailInToken(token);
    this.deps.logger.info({ email }, "email verified");
    const { state, setCookie } = await this.currentSession(headers);
    const signedIn = state !== null && email !== undefined && state.user.email.toLowerCase() === email.toLowerCase();
    return { verified: true, email, signedIn, setCookie: signedIn ? setCookie : [] };
  }

  /** The verification token is a signed JWT; its payload names the address (already checked by better-auth). */
  private emailInToken(token: string): string | undefined {
    try {
      const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as { email?: unknown };
      return typeof payload.email === "string" ? payload.email : undefined;
    } catch {
      return undefined;
    }
  }

  private toSession(token: string, user: { id: string; email: string; name: string }, headers: Headers): SessionResult {
    return { token, user: { id: user.id, email: user.email, name: user.name }, setCookie: headers.getSetCookie() };
  }
}
