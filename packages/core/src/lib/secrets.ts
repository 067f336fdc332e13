import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/** Compares two strings without leaking where they differ through timing. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  // timingSafeEqual needs equal lengths; compare against self to keep timing flat.
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}

export function randomBase64Url(bytes: number): string {
  return randomBytes(bytes).toString("base64url");
}
