import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

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
