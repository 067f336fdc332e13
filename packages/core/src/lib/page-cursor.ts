import { createHmac } from "node:crypto";
import { constantTimeEqual } from "./secrets";

/** 128 bits of HMAC-SHA256: enough that a forged cursor is never accepted, short enough for a query string. */
const TAG_BYTES = 16;

/**
 * Opaque pagination cursors: `<base64url of the position>.<base64url tag>`,
 * the tag an HMAC of the position and the account it was given to. A cursor
 * changed in any way, or sent by another account, does not open: the caller
 * gets a clear 400 rather than a page from a position it made up.
 */
export class PageCursors {
  private readonly key: Buffer;

  constructor(secret: string) {
    // A key of its own, derived from the service secret, like the signed URLs'.
    this.key = createHmac("sha256", secret).update("retouch:page-cursors:v1").digest();
  }

  private tag(owner: string, payload: string): string {
    return createHmac("sha256", this.key).update(`${owner}\n${payload}`).digest().subarray(0, TAG_BYTES).toString("base64url");
  }

  /** The cursor of `position` for `owner` (an account id). */
  seal(owner: string, position: readonly string[]): string {
    const payload = Buffer.from(JSON.stringify(position), "utf8").toString("base64url");
    return `${payload}.${this.tag(owner, payload)}`;
  }

  /** The position sealed in `cursor` for `owner`, or undefined when it is not a cursor this service gave that owner. */
  open(owner: string, cursor: string): string[] | undefined {
    const match = /^([A-Za-z0-9_-]{1,512})\.([A-Za-z0-9_-]{22})$/.exec(cursor);
    if (!match) return undefined;
    const [, payload = "", tag = ""] = match;
    if (!constantTimeEqual(tag, this.tag(owner, payload))) return undefined;
    try {
      const position: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
      return Array.isArray(position) && position.every((part) => typeof part === "string") ? position : undefined;
    } catch {
      return undefined;
    }
  }
}
