import { createHmac } from "node:crypto";
import { constantTimeEqual } from "./secrets";

/**
 * Links that grant access by themselves: `<path>?expires=<unix s>&signature=<hex>`,
 * where the signature is an HMAC-SHA256 of path and expiry. Changing either
 * one, or waiting past the expiry, makes the link fail.
 */
export class UrlSigner {
  private readonly key: Buffer;

  constructor(secret: string) {
    // A key of its own, derived from the service secret, so a leak of one use does not spill into the other.
    this.key = createHmac("sha256", secret).update("retouch:signed-urls:v1").digest();
  }

  private signature(pathname: string, expires: number): string {
    return createHmac("sha256", this.key).update(`${pathname}\n${expires}`).digest("hex");
  }

  /** The query string (without `?`) that authorises `pathname` until `expiresAt`. */
  sign(pathname: string, expiresAt: Date): string {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    return `expires=${expires}&signature=${this.signature(pathname, expires)}`;
  }

  verify(pathname: string, query: URLSearchParams, now = Date.now()): "valid" | "expired" | "invalid" {
    const expiresText = query.get("expires") ?? "";
    const signature = query.get("signature") ?? "";
    if (!/^\d{1,12}$/.test(expiresText) || !/^[0-9a-f]{64}$/.test(signature)) return "invalid";
    const expires = Number(expiresText);
    if (!constantTimeEqual(signature, this.signature(pathname, expires))) return "invalid";
    return expires * 1000 < now ? "expired" : "valid";
  }
}
