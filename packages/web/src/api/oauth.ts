/**
 * The OAuth authorization server's browser side (docs/oauth.md): better-auth's
 * endpoints under /auth/oauth2, called with the session cookie. Not tRPC: they
 * are the OAuth provider's own, the same ones MCP clients talk to.
 */

const AUTHORIZE_PATH = "/auth/oauth2/authorize";

/** What the authorization endpoint's signed request says about itself, if the query is one. */
export function authorizationRequest(search: string): URLSearchParams | undefined {
  const params = new URLSearchParams(search);
  return params.has("client_id") && params.has("sig") ? params : undefined;
}

/**
 * Back to the authorization endpoint with the same signed request, now with a
 * session: it goes on to the consent page (or, already approved, to the app).
 * A full navigation: the answer is a redirect the browser must follow.
 */
export function continueAuthorization(request: URLSearchParams): void {
  window.location.assign(`${AUTHORIZE_PATH}?${request.toString()}`);
}

export interface PublicClient {
  client_id: string;
  client_name?: string;
  client_uri?: string;
}

/** An OAuth endpoint's refusal, in its own words (`error_description`). */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(path, { credentials: "same-origin", ...init });
  const body = (await response.json().catch(() => ({}))) as { error_description?: string; message?: string };
  if (!response.ok) {
    const message =
      response.status === 401
        ? "You are not signed in any more. Start again from the app."
        : (body.error_description ?? body.message ?? `The service answered ${response.status}.`);
    throw new OAuthError(response.status, message);
  }
  return body as T;
}

/** The app asking: its registered name and home page. */
export function publicClient(clientId: string): Promise<PublicClient> {
  return call(`/auth/oauth2/public-client?client_id=${encodeURIComponent(clientId)}`);
}

/** Approve or deny; the answer is where to send the browser (back to the app, with a code or `access_denied`). */
export async function answerConsent(request: URLSearchParams, accept: boolean): Promise<string> {
  const { url } = await call<{ url: string }>("/auth/oauth2/consent", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ accept, oauth_query: request.toString() }),
  });
  return url;
}

/** What each scope lets an app do, in the person's terms. */
export const SCOPE_DESCRIPTIONS: Record<string, string> = {
  mcp: "Use Retouch's tools on your account: edit images (each edit spends a credit) and read your jobs and results.",
  offline_access: "Stay connected until you disconnect it, without asking you again.",
};
