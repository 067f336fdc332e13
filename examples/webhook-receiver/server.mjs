// A Retouch webhook receiver: `RETOUCH_WEBHOOK_SECRET=... node server.mjs`.
//
// Every callback is checked before it is trusted:
//   1. its signature, by @retouch/sdk's verifyWebhook: X-Retouch-Signature must be the HMAC-SHA256 of
//      "<X-Retouch-Timestamp>.<raw body>" keyed with the secret, compared in constant time, over the body exactly
//      as received (not re-serialised JSON), and X-Retouch-Timestamp (Unix milliseconds) must be recent, so a
//      captured request cannot be replayed later;
//   2. the same job_id is handled once: retries of an acknowledged callback are answered 200 and ignored.
import { createServer } from "node:http";
import { verifyWebhook, WEBHOOK_SIGNATURE_SCHEME, WebhookVerificationError } from "@retouch/sdk";

const MAX_BODY_BYTES = 1024 * 1024;

export function createReceiver({ secret, toleranceMs = WEBHOOK_SIGNATURE_SCHEME.defaultToleranceMs, onEvent = () => {} }) {
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
      let event;
      try {
        event = await verifyWebhook(secret, req.headers, rawBody, { toleranceMs });
      } catch (error) {
        // Authentic but not JSON: not something Retouch sends.
        const refused = error instanceof WebhookVerificationError;
        const problem = refused ? error.reason : "the body is not JSON";
        log({ event: "rejected", reason: problem });
        res.writeHead(refused ? 401 : 400, { "Content-Type": "application/json" }).end(JSON.stringify({ error: problem }));
        return;
      }
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
  const toleranceMs = Number(process.env.TOLERANCE_MS ?? WEBHOOK_SIGNATURE_SCHEME.defaultToleranceMs);
  createReceiver({ secret, toleranceMs }).listen(port, host, () => {
    process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://${host}:${port}/` })}\n`);
  });
}
