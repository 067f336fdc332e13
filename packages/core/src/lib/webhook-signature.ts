import { createHmac } from "node:crypto";

/**
 * Two signature schemes on every callback:
 * - Retouch's (the spec): `X-Retouch-Timestamp` (Unix ms) and `X-Retouch-Signature`
 *   = `sha256=` + hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the hex
 *   secret string from GET /api/webhooks/secret.
 * - Standard Webhooks (standardwebhooks.com): `webhook-id` (stable across retries),
 *   `webhook-timestamp` (Unix s) and `webhook-signature` = `v1,` + base64 HMAC-SHA256
 *   of `<id>.<timestamp>.<raw body>`, keyed with the secret's bytes; off-the-shelf
 *   verifiers take it as `whsec_` + base64 of those bytes.
 */

export function retouchSignature(secret: string, timestampMs: number, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestampMs}.${body}`).digest("hex")}`;
}

/** The webhook secret in the form Standard Webhooks libraries expect. */
export function standardWebhooksSecret(secretHex: string): string {
  return `whsec_${Buffer.from(secretHex, "hex").toString("base64")}`;
}

export function standardWebhooksSignature(secretHex: string, messageId: string, timestampSeconds: number, body: string): string {
  const digest = createHmac("sha256", Buffer.from(secretHex, "hex"))
    .update(`${messageId}.${timestampSeconds}.${body}`)
    .digest("base64");
  return `v1,${digest}`;
}

/** Every signature header of one attempt, all from the same instant. */
export function webhookHeaders(secretHex: string, messageId: string, body: string, now = Date.now()): Record<string, string> {
  const seconds = Math.floor(now / 1000);
  return {
    "X-Retouch-Timestamp": String(now),
    "X-Retouch-Signature": retouchSignature(secretHex, now, body),
    "webhook-id": messageId,
    "webhook-timestamp": String(seconds),
    "webhook-signature": standardWebhooksSignature(secretHex, messageId, seconds, body),
  };
}
