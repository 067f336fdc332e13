import { z } from "zod";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../auth/auth";

const email = z.email({ error: "must be a valid email address" }).max(254).describe("Email address");

export const signUpInput = z.object({
  email,
  password: z
    .string({ error: "is required" })
    .min(MIN_PASSWORD_LENGTH, { error: `must be at least ${MIN_PASSWORD_LENGTH} characters` })
    .max(MAX_PASSWORD_LENGTH)
    .describe(`Password, at least ${MIN_PASSWORD_LENGTH} characters`),
  name: z.string({ error: "is required" }).trim().min(1, { error: "must not be empty" }).max(100).describe("Display name"),
});

export const signInInput = z.object({
  email,
  password: z.string({ error: "is required" }).min(1, { error: "is required" }).max(MAX_PASSWORD_LENGTH).describe("Password"),
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
