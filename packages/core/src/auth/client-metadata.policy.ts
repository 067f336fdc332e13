/**
 * What Retouch accepts of an OAuth client's self-description, on top of
 * better-auth's own checks: from dynamic registration (RFC 7591) and from a
 * Client ID Metadata Document alike. Registration is open to anyone, and what
 * a client says of itself is shown to people on the consent page and in
 * Connected apps, so it must not be able to pass for the service, flood the
 * page, or carry a redirect a browser would run as script.
 */

/** Redirect URIs one client may register: real clients have one or two (a loopback and an https one). */
export const MAX_REDIRECT_URIS = 10;
/** Characters in one URI (redirect or client_uri, logo_uri...): browsers and proxies cut far longer ones anyway. */
export const MAX_URI_LENGTH = 2000;
/** Characters in a client's name: it is a title on the consent page. */
export const MAX_CLIENT_NAME_LENGTH = 100;

/** The service's own name: a client named like it could pass for it on the consent page. */
const SERVICE_NAME = "retouch";

/** Schemes that run or read something in the browser itself instead of reaching an app. */
const FORBIDDEN_SCHEMES = new Set(["javascript:", "data:", "file:", "vbscript:", "blob:", "about:"]);
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);
/** A private-use scheme of RFC 8252 §7.1: a reverse domain name (`com.example.app`), at least two labels. */
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+:$/;
/** Metadata fields holding a web page or image URL the consent page may link to. */
const WEB_URI_FIELDS = ["client_uri", "logo_uri", "tos_uri", "policy_uri"] as const;
/** Control and format characters (bidi overrides, zero-width joiners): they hide or reorder what a name shows. */
const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

/**
 * Letters from other scripts that look like Latin ones, folded so a name
 * spelled with them still reads as "retouch" (after NFKC, which already folds
 * full-width and styled letters).
 */
const LOOK_ALIKES: Record<string, string> = {
  а: "a",
  е: "e",
  о: "o",
  р: "p",
  с: "c",
  у: "y",
  х: "x",
  һ: "h",
  і: "i",
  ј: "j",
  ѕ: "s",
  т: "t",
  г: "r",
  ս: "u",
  ο: "o",
  ρ: "p",
  τ: "t",
  υ: "u",
  "0": "o",
  "3": "e",
  "7": "t",
};

export type ClientMetadataError = "invalid_redirect_uri" | "invalid_client_metadata";

export interface ClientMetadataRefusal {
  error: ClientMetadataError;
  /** Says what to change, for the client's developer. */
  description: string;
}

/** The first rule the metadata breaks, or undefined when Retouch accepts it (better-auth checks the rest). */
export function checkClientMetadata(metadata: unknown): ClientMetadataRefusal | undefined {
  if (!metadata || typeof metadata !== "object" || Array.isArray(metadata)) return undefined;
  const fields = metadata as Record<string, unknown>;
  return checkRedirectUris(fields.redirect_uris) ?? checkClientName(fields.client_name) ?? checkWebUris(fields);
}

function checkRedirectUris(value: unknown): ClientMetadataRefusal | undefined {
  if (value === undefined) return undefined;
  const refuse = (description: string): ClientMetadataRefusal => ({ error: "invalid_redirect_uri", description });
  if (!Array.isArray(value)) return refuse("redirect_uris must be an array of URIs");
  if (value.length > MAX_REDIRECT_URIS) return refuse(`at most ${MAX_REDIRECT_URIS} redirect_uris may be registered`);
  for (const uri of value) {
    if (typeof uri !== "string") return refuse("each redirect URI must be a string");
    if (uri.length > MAX_URI_LENGTH) return refuse(`a redirect URI may be at most ${MAX_URI_LENGTH} characters`);
    const reason = redirectUriProblem(uri);
    if (reason) return refuse(`${reason}: ${uri.slice(0, 200)}`);
  }
  return undefined;
}

/** Why a redirect URI is refused: https:, http: on loopback (native apps), or a reverse-domain private-use scheme. */
function redirectUriProblem(uri: string): string | undefined {
  const url = URL.parse(uri);
  if (!url) return "a redirect URI must be an absolute URI";
  if (url.hash) return "a redirect URI must not contain a fragment";
  const scheme = url.protocol.toLowerCase();
  if (FORBIDDEN_SCHEMES.has(scheme)) return `the ${scheme} scheme is not allowed in a redirect URI`;
  if (scheme === "https:") return undefined;
  if (scheme === "http:") {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : "http: redirect URIs are allowed only on loopback (127.0.0.1, [::1], localhost); use https:";
  }
  if (REVERSE_DOMAIN_SCHEME.test(scheme)) return undefined;
  return "a redirect URI must use https:, http: on loopback, or a private-use scheme named as a reverse domain (com.example.app:)";
}

function checkClientName(value: unknown): ClientMetadataRefusal | undefined {
  if (value === undefined) return undefined;
  const refuse = (description: string): ClientMetadataRefusal => ({ error: "invalid_client_metadata", description });
  if (typeof value !== "string") return refuse("client_name must be a string");
  if ([...value].length > MAX_CLIENT_NAME_LENGTH)
    return refuse(`client_name may be at most ${MAX_CLIENT_NAME_LENGTH} characters`);
  if (INVISIBLE.test(value)) return refuse("client_name must not contain control or invisible formatting characters");
  if (impersonatesService(value)) return refuse(`client_name must not contain the service's name ("Retouch"): name your app`);
  return undefined;
}

/** True when the name reads as containing "Retouch", whatever the case, separators or look-alike letters. */
export function impersonatesService(name: string): boolean {
  const folded = [...name.normalize("NFKC").toLowerCase()].map((char) => LOOK_ALIKES[char] ?? char).join("");
  // Separators a reader skips over: spaces, dots, dashes, underscores, punctuation of any script.
  const letters = folded.replace(/[^\p{L}\p{N}]/gu, "");
  return letters.includes(SERVICE_NAME);
}

function checkWebUris(fields: Record<string, unknown>): ClientMetadataRefusal | undefined {
  for (const field of WEB_URI_FIELDS) {
    const value = fields[field];
    if (value === undefined || value === null) continue;
    const refuse = (description: string): ClientMetadataRefusal => ({
      error: "invalid_client_metadata",
      description: `${field} ${description}`,
    });
    if (typeof value !== "string") return refuse("must be a string");
    if (value.length > MAX_URI_LENGTH) return refuse(`may be at most ${MAX_URI_LENGTH} characters`);
    const url = URL.parse(value);
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) return refuse("must be an https: (or http:) URL");
  }
  return undefined;
}
