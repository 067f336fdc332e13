import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { webhookHeaders } from "../../core/src/lib/webhook-signature";
import { verifyWebhook, WEBHOOK_SIGNATURE_SCHEME, WebhookVerificationError } from "../src/index";

const secret = "a".repeat(64);
const body = JSON.stringify({ job_id: "job_1", status: "done" });
const now = 1_800_000_000_000;

function sign(timestamp: number, raw: string, key = secret) {
  return {
    "X-Retouch-Timestamp": String(timestamp),
    "X-Retouch-Signature": `sha256=${createHmac("sha256", key).update(`${timestamp}.${raw}`).digest("hex")}`,
  };
}

describe("verifyWebhook", () => {
  it("returns the parsed body of an authentic, fresh callback (plain object or Headers)", async () => {
    expect(await verifyWebhook(secret, sign(now, body), body, { now })).toEqual({ job_id: "job_1", status: "done" });
    const headers = new Headers(sign(now - 1000, body));
    expect(await verifyWebhook(secret, headers, new TextEncoder().encode(body), { now })).toMatchObject({ job_id: "job_1" });
  });

  it.each([
    ["a tampered body", sign(now, body), body.replace("done", "error")],
    ["another secret", sign(now, body, "b".repeat(64)), body],
    ["a missing signature", { "X-Retouch-Timestamp": String(now) }, body],
    ["a malformed signature", { "X-Retouch-Timestamp": String(now), "X-Retouch-Signature": "sha256=zz" }, body],
    ["a stale timestamp", sign(now - 10 * 60_000, body), body],
    ["a timestamp from the future", sign(now + 10 * 60_000, body), body],
  ])("refuses %s", async (_label, headers, raw) => {
    await expect(verifyWebhook(secret, headers, raw, { now })).rejects.toBeInstanceOf(WebhookVerificationError);
  });

  it("honours toleranceMs", async () => {
    const old = sign(now - 60_000, body);
    await expect(verifyWebhook(secret, old, body, { now, toleranceMs: 30_000 })).rejects.toThrow(/tolerance/);
    await expect(verifyWebhook(secret, old, body, { now, toleranceMs: 120_000 })).resolves.toBeDefined();
  });

  it.each([
    ["missing or malformed X-Retouch-Timestamp", { "X-Retouch-Signature": sign(now, body)["X-Retouch-Signature"] }, body],
    ["missing or malformed X-Retouch-Signature", { "X-Retouch-Timestamp": String(now) }, body],
    ["stale timestamp", sign(now - 10 * 60_000, body), body],
    ["signature mismatch", sign(now, body), body.replace("done", "error")],
    ["signature mismatch", { "X-Retouch-Timestamp": String(now), "X-Retouch-Signature": "sha256=zz" }, body],
  ])("says why in `reason`: %s", async (reason, headers, raw) => {
    const refusal = await verifyWebhook(secret, headers, raw, { now }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(WebhookVerificationError);
    expect((refusal as WebhookVerificationError).reason).toBe(reason);
  });
});

describe("the service's signature and the SDK's verifier", () => {
  // Core signs (node:crypto) and cannot import the SDK; this vector holds the two to one scheme.
  it("agree: the headers core sends verify, under the scheme's header names", async () => {
    const sent = webhookHeaders(secret, "msg_1", body, now);
    expect(Object.keys(sent)).toEqual(
      expect.arrayContaining([WEBHOOK_SIGNATURE_SCHEME.timestampHeader, WEBHOOK_SIGNATURE_SCHEME.signatureHeader]),
    );
    expect(sent[WEBHOOK_SIGNATURE_SCHEME.signatureHeader]?.startsWith(WEBHOOK_SIGNATURE_SCHEME.signaturePrefix)).toBe(true);
    expect(await verifyWebhook(secret, sent, body, { now })).toEqual({ job_id: "job_1", status: "done" });
    expect(
      await verifyWebhook(secret, new Headers(sent), body, { now: now + WEBHOOK_SIGNATURE_SCHEME.defaultToleranceMs }),
    ).toEqual({ job_id: "job_1", status: "done" });
    await expect(
      verifyWebhook(secret, sent, body, { now: now + WEBHOOK_SIGNATURE_SCHEME.defaultToleranceMs + 1 }),
    ).rejects.toThrow(/stale timestamp/);
  });
});
