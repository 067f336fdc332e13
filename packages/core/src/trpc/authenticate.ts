import { bearerToken, type Principal } from "../services/principal";
import type { Services } from "../services/services";

/** The credentials an operation accepts (`ProcedureMeta.auth` other than "public"). */
export type CredentialKind = "api_key" | "key_or_session";

/**
 * Resolves the caller from the request headers alone. The HTTP host calls it
 * before reading a body (an unauthenticated upload is refused unread) and hands
 * the principal to the context; the procedures' middleware calls it only when
 * no transport did.
 */
export async function authenticate(
  services: Pick<Services, "apiKeys" | "accounts">,
  headers: Headers,
  kind: CredentialKind,
): Promise<Principal | undefined> {
  const token = bearerToken(headers.get("authorization"));
  // A bearer header that is present but wrong is refused, not silently ignored in favour of a cookie.
  if (token) return services.apiKeys.authenticate(token);
  return kind === "key_or_session" ? services.accounts.sessionPrincipal(headers) : undefined;
}
