import { MCP_ACCESS_TOKEN_PREFIX } from "../auth/mcp-oauth.plugin";
import { bearerToken, type Principal } from "../services/principal";
import type { Services } from "../services/services";

/** The credentials an operation accepts (`ProcedureMeta.auth` other than "public"). */
export type ProcedureCredentialKind = "api_key" | "key_or_session";

/**
 * The credentials a surface accepts: an operation's, or the MCP endpoint's
 * `key_or_mcp_token` (a `pk_` key or an OAuth access token issued for it).
 */
export type CredentialKind = ProcedureCredentialKind | "key_or_mcp_token";

/**
 * Resolves the caller from the request headers alone. The HTTP host calls it
 * before reading a body (an unauthenticated upload is refused unread) and hands
 * the principal to the context; the procedures' middleware calls it only when
 * no transport did.
 *
 * A bearer credential says what it is by its prefix: `pk_` an API key,
 * `mcp_at_` an OAuth access token, accepted only where `kind` is the MCP
 * endpoint's (the REST API and /trpc answer it 401, as any unknown token).
 */
export async function authenticate(
  services: Pick<Services, "apiKeys" | "accounts" | "mcpOAuth">,
  headers: Headers,
  kind: CredentialKind,
): Promise<Principal | undefined> {
  const token = bearerToken(headers.get("authorization"));
  // A bearer header that is present but wrong is refused, not silently ignored in favour of a cookie.
  if (token?.startsWith(MCP_ACCESS_TOKEN_PREFIX)) {
    return kind === "key_or_mcp_token" ? services.mcpOAuth.authenticate(token) : undefined;
  }
  if (token) return services.apiKeys.authenticate(token);
  return kind === "key_or_session" ? services.accounts.sessionPrincipal(headers) : undefined;
}
