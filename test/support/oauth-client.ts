import { get as httpGet } from "node:http";
import { auth, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { expect } from "vitest";
import { request } from "./http-client";

/**
 * An MCP client's OAuth state, kept in memory, for the official SDK's `auth()`:
 * what a desktop agent would persist. Instead of opening a browser it keeps
 * the authorization URL for the test to visit.
 */
export class MemoryOAuthClientProvider implements OAuthClientProvider {
  /** Where the SDK sent the person to authorize; set by `redirectToAuthorization`. */
  authorizationUrl: URL | undefined;
  private information: OAuthClientInformationMixed | undefined;
  private savedTokens: OAuthTokens | undefined;
  private verifier: string | undefined;

  constructor(
    /** The client's redirect URI: nothing needs to listen there, the test reads the code off the redirect. */
    readonly redirectUrl: string,
    private readonly name = "Test Agent",
    /** Where its Client ID Metadata Document is: the SDK then uses this URL as its client_id instead of registering. */
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.savedTokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.savedTokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  /** What the SDK calls when the server refuses what it holds (a revoked grant): forget it, and start over. */
  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery") {
    if (scope === "all" || scope === "tokens") this.savedTokens = undefined;
    if (scope === "all" || scope === "client") this.information = undefined;
    if (scope === "all" || scope === "verifier") this.verifier = undefined;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error("no code verifier saved");
    return this.verifier;
  }
}

export interface Navigation {
  status: number;
  location: URL | undefined;
  headers: import("node:http").IncomingHttpHeaders;
}

/**
 * A browser's top-level navigation. Node's fetch always sends
 * `Sec-Fetch-Mode: cors`, which better-auth answers with JSON instead of a
 * redirect, so this goes through node:http.
 */
export function navigate(url: string | URL, cookie?: string, extraHeaders: Record<string, string> = {}): Promise<Navigation> {
  return new Promise((resolve, reject) => {
    const headers = { accept: "text/html", "sec-fetch-mode": "navigate", ...(cookie ? { cookie } : {}), ...extraHeaders };
    httpGet(url, { headers }, (res) => {
      res.resume();
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          location: res.headers.location ? new URL(res.headers.location, url) : undefined,
          headers: res.headers,
        }),
      );
    }).on("error", reject);
  });
}

/** What the consent page sends: Approve or Deny, with the session cookie, from the service's own origin. */
export function consent(base: string, cookie: string, consentPage: URL, accept: boolean, origin = base) {
  return request(base, "POST", "/auth/oauth2/consent", {
    cookie,
    headers: { origin },
    body: { accept, oauth_query: consentPage.search.slice(1) },
  });
}

/** Sign-in page -> (signed in) authorize again -> the consent page, as the dashboard does it. */
export async function throughSignIn(base: string, authorizationUrl: URL, cookie: string): Promise<URL> {
  const first = await navigate(authorizationUrl);
  expect(first.status).toBe(302);
  expect(first.location?.pathname).toBe("/sign-in");
  const second = await navigate(`${base}/auth/oauth2/authorize${first.location?.search}`, cookie);
  expect(second.status).toBe(302);
  expect(second.location?.pathname).toBe("/oauth/consent");
  return second.location as URL;
}

/**
 * An MCP client connected to the account the session cookie belongs to, the
 * whole way: the SDK's auth() registers it, the person approves it, the code
 * is exchanged. Answers the client's id and the provider holding its tokens.
 */
export async function connectApp(
  base: string,
  cookie: string,
  name: string,
): Promise<{ clientId: string; provider: MemoryOAuthClientProvider }> {
  const provider = new MemoryOAuthClientProvider("http://127.0.0.1:9/callback", name);
  expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("REDIRECT");
  const consentPage = await throughSignIn(base, provider.authorizationUrl as URL, cookie);
  const approved = await consent(base, cookie, consentPage, true);
  expect(approved.status).toBe(200);
  const code = new URL(approved.body.url).searchParams.get("code") as string;
  expect(await auth(provider, { serverUrl: `${base}/mcp`, authorizationCode: code })).toBe("AUTHORIZED");
  return { clientId: provider.clientInformation()?.client_id as string, provider };
}
