import { z } from "zod";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../auth/auth";
import { PLAN_NAMES } from "../config/plans";

const email = z.email({ error: "must be a valid email address" }).max(254).describe("Email address");

const newPassword = z
  .string({ error: "is required" })
  .min(MIN_PASSWORD_LENGTH, { error: `must be at least ${MIN_PASSWORD_LENGTH} characters` })
  .max(MAX_PASSWORD_LENGTH, { error: `must be at most ${MAX_PASSWORD_LENGTH} characters` });

export const signUpInput = z.object({
  email,
  password: newPassword.describe(`Password, at least ${MIN_PASSWORD_LENGTH} characters`),
  name: z
    .string({ error: "is required" })
    .trim()
    .min(1, { error: "must not be empty" })
    // Without its own message a check takes the schema's ("is required"), which misleads for a long name.
    .max(100, { error: "must be at most 100 characters" })
    .describe("Display name"),
});

export const signInInput = z.object({
  email,
  password: z
    .string({ error: "is required" })
    .min(1, { error: "is required" })
    .max(MAX_PASSWORD_LENGTH, { error: `must be at most ${MAX_PASSWORD_LENGTH} characters` })
    .describe("Password"),
});

export const sessionOutput = z.object({
  token: z.string().describe("Session token; the same session is also set as a cookie"),
  user: z.object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
  }),
});

export const resendVerificationInput = z.object({ email });

/** Resolved against any origin, a path that stays on it: `/dashboard`, never `//evil.example` or `/\evil.example`. */
function isSameOriginPath(value: string): boolean {
  const base = "http://same-origin.invalid";
  try {
    return value.startsWith("/") && new URL(value, base).origin === base;
  } catch {
    return false;
  }
}

export const requestPasswordResetInput = z.object({
  email,
  redirect_to: z
    .string()
    .max(2048)
    .refine(isSameOriginPath, { error: "must be a path on this site, such as /dashboard (not a URL to another site)" })
    .optional()
    .describe(
      "Where the dashboard goes once the password is reset: a path on this site (e.g. `/dashboard`), added to the emailed link as `redirect_to`",
    ),
});

export const resetPasswordInput = z.object({
  token: z
    .string({ error: "is required" })
    .min(1, { error: "is required" })
    .max(512, { error: "must be at most 512 characters" })
    .describe("The `token` of the emailed link"),
  new_password: newPassword.describe(`The new password, at least ${MIN_PASSWORD_LENGTH} characters`),
});

export const sessionStateOutput = z
  .object({
    user: z.object({
      id: z.string(),
      email: z.string(),
      name: z.string(),
      email_verified: z.boolean().describe("Whether the address was verified (keys and edits need it)"),
    }),
    session: z.object({
      expires_at: z.string().describe("When the session ends unless it is used again (ISO 8601)"),
    }),
  })
  .nullable();

export const accountOutput = z.object({
  email: z.string(),
  name: z.string(),
  email_verified: z.boolean().describe("Whether the address was verified (keys and edits need it)"),
  plan: z.enum(PLAN_NAMES).describe("The account's plan; its limits are in `limits`"),
  credits_remaining: z.number().int().describe("Credits left: each image costs 1, a failed job's is refunded"),
  limits: z.object({
    per_minute: z.number().int().describe("Images accepted in any 60 seconds"),
    concurrent: z.number().int().describe("Jobs pending at once; also the largest batch"),
  }),
  usage: z.object({
    this_month: z
      .number()
      .int()
      .describe(
        "Jobs charged this calendar month (UTC): created since the 1st at 00:00 UTC and still holding their credit, that is pending or done. A failed job is refunded and not counted (it leaves the count when it fails); a batch item that never started was never charged. Each counted job cost 1 credit.",
      ),
  }),
});
