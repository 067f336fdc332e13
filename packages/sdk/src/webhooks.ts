/**
 * Verifies a Retouch settlement callback: `X-Retouch-Signature` is
 * `sha256=` + hex HMAC-SHA256 of `<X-Retouch-Timestamp>.<raw body>` keyed with
 * the account's webhook secret. Uses Web Crypto, so it runs in Node 22+,
 * browsers and edge runtimes.
 */

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

export interface VerifyWebhookOptions {
  /** Oldest acceptable timestamp, in milliseconds before now (default 5 minutes). */
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
  const timestamp = header(headers, "x-retouch-timestamp");
  const signature = header(headers, "x-retouch-signature");
  if (!timestamp || !/^\d+$/.test(timestamp)) throw new WebhookVerificationError("missing or malformed X-Retouch-Timestamp");
  if (!signature?.startsWith("sha256=")) throw new WebhookVerificationError("missing or malformed X-Retouch-Signature");
  const tolerance = options.toleranceMs ?? 5 * 60_000;
  const age = (options.now ?? Date.now()) - Number(timestamp);
  if (Math.abs(age) > tolerance) throw new WebhookVerificationError(`timestamp is outside the ${tolerance} ms tolerance`);

  const provided = hexToBytes(signature.slice("sha256=".length));
  if (!provided) throw new WebhookVerificationError("signature is not hex");
  const body = typeof rawBody === "string" ? new TextEncoder().encode(rawBody) : rawBody;
  const prefix = new TextEncoder().encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
  // subtle.verify compares in constant time.
  if (!(await crypto.subtle.verify("HMAC", key, provided, signed))) {
    throw new WebhookVerificationError("signature does not match");
  }
  return JSON.parse(new TextDecoder().decode(body)) as T;
}
