import type { IncomingMessage, ServerResponse } from "node:http";
import type { Services } from "@retouch/core";
import { toWebHeaders } from "../http/request-context";
import { sendHtml } from "../http/responses";
import { escapeHtml, page } from "./layout";

export const VERIFY_EMAIL_PATH = "/auth/verify-email";

/** Where the emailed link lands: verifies the address and says so in plain words. */
export async function verifyEmailPage(services: Services, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const base = escapeHtml(services.config.publicBaseUrl);
  const resend = `<p>Request a fresh link; it goes to the address you signed up with:</p>
<pre>curl -X POST ${base}/auth/send-verification-email \\
  -H 'Content-Type: application/json' \\
  -d '{"email": "you@example.com"}'</pre>`;

  const token = url.searchParams.get("token");
  if (!token) {
    const body = `<h1 class="bad">This link is incomplete</h1>
<p>The verification link is missing its token. Open the link exactly as it appears in the email.</p>
${resend}`;
    sendHtml(res, 400, page("Verification link incomplete", body));
    return;
  }

  const outcome = await services.accounts.verifyEmail(token, toWebHeaders(req));
  if (outcome.verified) {
    const who = outcome.email ? ` <strong>${escapeHtml(outcome.email)}</strong>` : "";
    const body = `<h1 class="ok">Your email${who} is verified</h1>
<p>You can now create API keys and submit edits. Create a key with the session cookie from sign-in:</p>
<pre>curl -X POST ${base}/api/keys \\
  -H 'Content-Type: application/json' \\
  -H 'Cookie: &lt;the Set-Cookie value from sign-in&gt;' \\
  -d '{"name": "my first key"}'</pre>
<p>You can close this page.</p>`;
    sendHtml(res, 200, page("Email verified", body));
    return;
  }

  const reason =
    outcome.reason === "expired"
      ? "This verification link has expired."
      : "This verification link is not valid. It may have been mistyped or cut off by your mail client.";
  sendHtml(
    res,
    400,
    page("Verification failed", `<h1 class="bad">We could not verify your email</h1>\n<p>${reason}</p>\n${resend}`),
  );
}
