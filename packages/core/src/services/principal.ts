/** Who is calling: resolved from a bearer API key, a session cookie or (on /mcp only) an OAuth access token. */
export interface Principal {
  userId: string;
  email: string;
  name: string;
  emailVerified: boolean;
  via: "api_key" | "session" | "oauth";
  /** Set when `via` is "api_key". */
  keyId?: string;
  /** Set when `via` is "oauth": the MCP app the person connected. */
  oauthClientId?: string;
}

/** What the services need to know about the HTTP request, whatever the transport. */
export interface RequestInfo {
  headers: Headers;
  /** The client's address, already resolved through trusted proxies. */
  ip: string;
}

/** The token of an `Authorization: Bearer <token>` header, if that is what it holds. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
}
