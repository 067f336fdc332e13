// A Retouch webhook receiver with no dependencies: `RETOUCH_WEBHOOK_SECRET=... node server.mjs`.
//
// Every callback is checked before it is trusted:
//   1. X-Retouch-Signature must equal "sha256=" + hex HMAC-SHA256(secret, "<X-Retouch-Timestamp>.<raw body>"),
//      compared in constant time, over the body exactly as received (not re-serialised JSON);
//   2. X-Retouch-Timestamp (Unix milliseconds) must be recent, so a captured request cannot be replayed later;
//   3. the same job_id is handled once: retries of an acknowledged callback are answered 200 and ignored.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const MAX_BODY_BYTES = 1024 * 1024;

/** Returns null when the request is authentic and fresh, or the reason it is not. */
export function verifySignature(
  secret,
  timestampHeader,
  signatureHeader,
  rawBody,
  { toleranceMs = 5 * 60_000, now = Date.now() } = {},
) {
  if (!timestampHeader || !/^\d+$/.test(timestampHeader)) return "missing or malformed X-Retouch-Timestamp";
  if (!signatureHeader?.startsWith("sha256=")) return "missing or malformed X-Retouch-Signature";
  if (Math.abs(now - Number(timestampHeader)) > toleranceMs) return "stale timestamp";
  const expected = Buffer.from(
    `sha256=${createHmac("sha256", secret).update(`${timestampHeader}.`).update(rawBody).digest("hex")}`,
  );
  const provided = Buffer.from(signatureHeader);
  if (provided.length !== expected.length || !timingSafeEqual(provided, expected)) return "signature mismatch";
  return null;
}

export function createReceiver({ secret, toleranceMs = 5 * 60_000, onEvent = () => {} }) {
  // job_id -> when it was handled. Use a database table with a unique key in production.
  const handled = new Map();
  const log = (fields) => process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...fields })}\n`);

  return createServer((req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405, { Allow: "POST" }).end();
      return;
    }
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on("end", async () => {
      const rawBody = Buffer.concat(chunks);
      const problem = verifySignature(secret, req.headers["x-retouch-timestamp"], req.headers["x-retouch-signature"], rawBody, {
        toleranceMs,
      });
      if (problem) {
        log({ event: "rejected", reason: problem });
        res.writeHead(401, { "Content-Type": "application/json" }).end(JSON.stringify({ error: problem }));
        return;
      }
      const event = JSON.parse(rawBody.toString("utf8"));
      if (handled.has(event.job_id)) {
        log({ event: "duplicate", job_id: event.job_id });
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ ok: true, duplicate: true }));
        return;
      }
      handled.set(event.job_id, Date.now());
      log({ event: "accepted", job_id: event.job_id, status: event.status, result_url: event.result_url ?? null });
      // Acknowledge fast; do slow work (downloading result_url, updating your records) after answering.
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ ok: true }));
      await onEvent(event);
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const secret = process.env.RETOUCH_WEBHOOK_SECRET;
  if (!secret) {
    console.error(
      "Set RETOUCH_WEBHOOK_SECRET to your secret: curl -H 'Authorization: Bearer pk_...' $RETOUCH_BASE_URL/api/webhooks/secret",
    );
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 8787);
  const host = process.env.HOST ?? "127.0.0.1";
  createReceiver({ secret, toleranceMs: Number(process.env.TOLERANCE_MS ?? 5 * 60_000) }).listen(port, host, () => {
    process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://${host}:${port}/` })}\n`);
  });
}
