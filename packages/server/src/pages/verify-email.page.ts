import type { Services } from "@retouch/core";
import type { HttpContext } from "../http/request-context";
import { htmlResponse } from "../http/responses";
import { escapeHtml, page } from "./layout";

export const VERIFY_EMAIL_PATH = "/auth/verify-email";
/** Where a verified person already signed in to that account lands (a client route of the dashboard). */
export const DASHBOARD_HOME = "/dashboard";
/** Where a person whose link failed lands: the dashboard's sign-in page explains `verify_error` and offers a fresh link. */
export const SIGN_IN_PAGE = "/sign-in";
/** Where anyone else lands once the address is verified: the sign-in page says so (`verified=1`). */
export const VERIFIED_SIGN_IN_PAGE = `${SIGN_IN_PAGE}?verified=1`;

/**
 * Where the emailed link lands. It verifies the address and never signs
 * anyone in: a link is only a token, and an attacker's own link opened from
 * their site would otherwise sign the visitor into the attacker's account
 * (login CSRF). A browser already signed in to that same account stays so.
 * - with the dashboard served: 303 to /dashboard for that signed-in browser,
 *   to /sign-in?verified=1 for any other, or for a link that does not work
 *   303 to /sign-in?verify_error=expired|invalid (never a JSON error);
 * - without one (an API-only deployment): a page that says so in plain words,
 *   with what to do next.
 */
export function createVerifyEmailPage(services: Services, options: { dashboard: boolean }) {
  const base = escapeHtml(services.config.publicBaseUrl);
  const resend = `<p>Request a fresh link; it goes to the address you signed up with:</p>
<pre>curl -X POST ${base}/auth/send-verification-email \\
  -H 'Content-Type: application/json' \\
  -d '{"email": "you@example.com"}'</pre>`;
  const redirect = (location: string, setCookie: string[] = []) => {
    const headers = new Headers({ Location: location, "Cache-Control": "no-store" });
    for (const cookie of setCookie) headers.append("Set-Cookie", cookie);
    return new Response(null, { status: 303, headers });
  };

  return async (c: HttpContext): Promise<Response> => {
    const token = c.req.query("token");
    if (!token) {
      if (options.dashboard) return redirect(`${SIGN_IN_PAGE}?verify_error=invalid`);
      const body = `<h1 class="bad">This link is incomplete</h1>
<p>The verification link is missing its token. Open the link exactly as it appears in the email.</p>
${resend}`;
      return htmlResponse(400, page("Verification link incomplete", body));
    }

    const outcome = await services.accounts.verifyEmail(token, c.req.raw.headers);
    if (outcome.verified) {
      if (options.dashboard) return redirect(outcome.signedIn ? DASHBOARD_HOME : VERIFIED_SIGN_IN_PAGE, outcome.setCookie);
      const who = outcome.email ? ` <strong>${escapeHtml(outcome.email)}</strong>` : "";
      const body = `<h1 class="ok">Your email${who} is verified</h1>
<p>${outcome.signedIn ? "You are signed in." : "Verified, please sign in: this link does not sign you in."} You can now create API keys and submit edits. Sign in, then create a key with the session cookie it answers:</p>
<pre>curl -i -X POST ${base}/auth/sign-in/email \\
  -H 'Content-Type: application/json' \\
  -d '{"email": "you@example.com", "password": "&lt;your password&gt;"}'</pre>
<pre>curl -X POST ${base}/api/keys \\
  -H 'Content-Type: application/json' \\
  -H 'Cookie: &lt;the Set-Cookie value from sign-in&gt;' \\
  -d '{"name": "my first key"}'</pre>
<p>You can close this page.</p>`;
      const response = htmlResponse(200, page("Email verified", body));
      for (const cookie of outcome.setCookie) response.headers.append("Set-Cookie", cookie);
      return response;
    }

    if (options.dashboard) return redirect(`${SIGN_IN_PAGE}?verify_error=${outcome.reason}`);
    const reason =
      outcome.reason === "expired"
        ? "This verification link has expired."
        : "This verification link is not valid. It may have been mistyped or cut off by your mail client.";
    return htmlResponse(
      400,
      page("Verification failed", `<h1 class="bad">We could not verify your email</h1>\n<p>${reason}</p>\n${resend}`),
    );
  };
}
