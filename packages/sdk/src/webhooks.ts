/**
 * Verifies a Retouch settlement callback. Uses Web Crypto, so it runs in
 * Node 22+, browsers and edge runtimes.
 */

/**
 * Retouch's signature scheme (the API contract), as a receiver checks it:
 * `X-Retouch-Signature` is `sha256=` + hex HMAC-SHA256 of
 * `<X-Retouch-Timestamp>.<raw body>`, keyed with the account's webhook secret
 * (the hex string itself); the timestamp is Unix milliseconds. The service
 * signs in core (lib/webhook-signature.ts), which cannot import the SDK: the
 * SDK's webhooks test verifies core's headers with this verifier.
 */
export const WEBHOOK_SIGNATURE_SCHEME = {
  timestampHeader: "X-Retouch-Timestamp",
  signatureHeader: "X-Retouch-Signature",
  /** Before the hex digest in the signature header. */
  signaturePrefix: "sha256=",
  /** The text the HMAC covers. */
  signedText: (timestamp: string, body: string) => `${timestamp}.${body}`,
  /** How far a timestamp may be from now, either way, unless a receiver says otherwise. */
  defaultToleranceMs: 5 * 60_000,
} as const;

/** Why a callback was refused, in words a receiver can answer with (stable: receivers may match on them). */
export type WebhookRejection =
  | "missing or malformed X-Retouch-Timestamp"
  | "missing or malformed X-Retouch-Signature"
  | "stale timestamp"
  | "signature mismatch";

export class WebhookVerificationError extends Error {
  /** Why, in short; `message` says more. */
  readonly reason: WebhookRejection;

  constructor(reason: WebhookRejection, message: string = reason) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

export interface VerifyWebhookOptions {
  /** Oldest acceptable timestamp, in milliseconds before now (default `WEBHOOK_SIGNATURE_SCHEME.defaultToleranceMs`, 5 minutes). */
  toleranceMs?: number;
  /** For tests: the current time in Unix milliseconds. */
  now?: number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}

// Backed by an ArrayBuffer, as the DOM typing of crypto.subtle.verify asks (browser bundles type-check with it).
function hexToBytes(hex: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return undefined;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/**
 * Throws `WebhookVerificationError` unless the request is authentic and fresh;
 * returns the parsed body otherwise. Pass the body exactly as received (bytes
 * or text), not re-serialised JSON.
 */
export async function verifyWebhook<T = unknown>(
  secret: string,
  headers: HeaderSource,
  rawBody: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): Promise<T> {
  const scheme = WEBHOOK_SIGNATURE_SCHEME;
  const timestamp = header(headers, scheme.timestampHeader.toLowerCase());
  const signature = header(headers, scheme.signatureHeader.toLowerCase());
  if (!timestamp || !/^\d+$/.test(timestamp)) throw new WebhookVerificationError("missing or malformed X-Retouch-Timestamp");
  if (!signature?.startsWith(scheme.signaturePrefix))
    throw new WebhookVerificationError("missing or malformed X-Retouch-Signature");
  const tolerance = options.toleranceMs ?? scheme.defaultToleranceMs;
  const age = (options.now ?? Date.now()) - Number(timestamp);
  if (Math.abs(age) > tolerance)
    throw new WebhookVerificationError("stale timestamp", `stale timestamp: outside the ${tolerance} ms tolerance`);

  const provided = hexToBytes(signature.slice(scheme.signaturePrefix.length));
  if (!provided) throw new WebhookVerificationError("signature mismatch", "signature mismatch: the signature is not hex");
  const body = typeof rawBody === "string" ? new TextEncoder().encode(rawBody) : rawBody;
  // The signed text is `<timestamp>.<body>`; the body is appended as bytes, so it is never decoded and re-encoded.
  const prefix = new TextEncoder().encode(scheme.signedText(timestamp, ""));
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
  // subtle.verify compares in constant time.
  if (!(await crypto.subtle.verify("HMAC", key, provided, signed))) {
    throw new WebhookVerificationError("signature mismatch");
  }
  return JSON.parse(new TextDecoder().decode(body)) as T;
}
