import { z } from "zod";
import { PLAN_NAMES } from "../config/plans";

const PAID_PLANS = ["starter", "core", "pro"] as const;

const money = {
  amount: z
    .number()
    .int()
    .nullable()
    .describe("Price in the currency's smallest unit (cents); null when Stripe could not be asked"),
  currency: z.string().nullable().describe("ISO currency code, lower case (usd)"),
};

const limits = z.object({
  per_minute: z.number().int().describe("Images accepted per minute"),
  concurrent: z.number().int().describe("Jobs pending at once; also the largest batch"),
});

export const billingStateOutput = z.object({
  plan: z.enum(PLAN_NAMES).describe("The plan whose limits apply now"),
  subscription: z
    .object({
      plan: z.enum(PAID_PLANS),
      status: z
        .string()
        .describe("Stripe's status: active, trialing, past_due (a renewal failed; the plan is kept), unpaid, canceled, ..."),
      renews_at: z
        .string()
        .nullable()
        .describe("End of the current period (ISO 8601): the next renewal, or the end when cancel_at_period_end"),
      cancel_at_period_end: z.boolean(),
    })
    .nullable()
    .describe("The subscription, if the account has or had one"),
  credits_remaining: z.number().int().describe("The whole balance: allowance, packs and granted credits"),
  limits,
  allowance: z
    .object({
      monthly: z.number().int().describe("Credits the plan grants each period"),
      remaining: z.number().int().describe("What is left of this period's allowance (spent first; it does not roll over)"),
    })
    .nullable()
    .describe("The plan's allowance; null on free"),
  packs: z.array(z.object({ credits: z.number().int(), ...money })).describe("Credit packs on sale; bought credits never expire"),
  plans: z
    .array(
      z.object({
        plan: z.enum(PAID_PLANS),
        monthly_credits: z.number().int(),
        interval: z.string().nullable().describe("Billing interval of the price (month)"),
        limits,
        ...money,
      }),
    )
    .describe("Plans on sale"),
  purchases: z
    .array(
      z.object({
        id: z.string(),
        kind: z.enum(["pack", "plan"]),
        plan: z.enum(PAID_PLANS).nullable(),
        credits: z.number().int().describe("Credits the purchase granted"),
        ...money,
        status: z.enum(["paid", "partially_refunded", "refunded", "disputed"]),
        created_at: z.string(),
      }),
    )
    .describe("Pack purchases and paid plan periods, newest first (the last 50)"),
});

export const checkoutInput = z
  .object({
    credits: z.number().int().positive().optional().describe("The credits of a pack on sale (GET /api/billing lists them)"),
    plan: z.enum(PAID_PLANS).optional().describe("A plan to subscribe to"),
  })
  .refine((input) => (input.credits === undefined) !== (input.plan === undefined), {
    message: 'send either "credits" (a pack) or "plan", not both',
  });

export const urlOutput = z.object({ url: z.url().describe("Send the person's browser here") });
