import { randomBytes } from "node:crypto";

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lower case

/** 128 random bits as 26 base32 characters. */
function randomBase32(bytes = 16): string {
  const buffer = randomBytes(bytes);
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of buffer) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

export type IdPrefix =
  | "usr"
  | "ses"
  | "acc"
  | "vrf"
  | "key"
  | "job"
  | "bat"
  | "whd"
  // Click-to-select sessions (selections.service.ts): an encoded picture kept in memory for a few minutes.
  | "sel"
  // OAuth provider rows (mcp-oauth.plugin.ts): clients, access and refresh tokens, consents, resources and their links, assertions.
  | "ocl"
  | "oat"
  | "ort"
  | "ocn"
  | "ors"
  | "ocr"
  | "oas";

/** A type-prefixed identifier such as `key_0r7c...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase32()}`;
}
