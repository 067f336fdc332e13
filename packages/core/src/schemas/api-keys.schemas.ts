import { z } from "zod";

export const apiKeyListing = z.object({
  id: z.string().describe("Key id (`key_...`)"),
  name: z.string().describe("Human label"),
  prefix: z.string().describe("First 15 characters of the key followed by `...`"),
  lastUsedAt: z.string().nullable().describe("When the key last authenticated a request (ISO 8601), or null"),
  createdAt: z.string().describe("Creation time (ISO 8601)"),
});

export const listKeysOutput = z.object({ keys: z.array(apiKeyListing) });

export const createKeyInput = z.object({
  name: z
    .string({ error: "is required" })
    .trim()
    .min(1, { error: "is required" })
    // Without its own message a check takes the schema's ("is required"), which misleads for a long name.
    .max(100, { error: "must be at most 100 characters" })
    .describe("A label for the key"),
});

export const createKeyOutput = z.object({
  key: z.string().describe("The full secret (`pk_...`), shown only in this response"),
  id: z.string(),
  prefix: z.string(),
  name: z.string(),
});

export const revokeKeyInput = z.object({ id: z.string().min(1).max(100).describe("Key id") });

export const okOutput = z.object({ ok: z.boolean() });
