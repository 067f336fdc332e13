import { resendVerificationInput } from "../../schemas/accounts.schemas";
import { okOutput } from "../../schemas/api-keys.schemas";
import { publicProcedure } from "../trpc";

export const resendVerification = publicProcedure
  .meta({
    errors: ["invalid_request", "rate_limited"],
    openapi: {
      method: "POST",
      path: "/auth/send-verification-email",
      protect: false,
      tags: ["Accounts"],
      summary: "Send the verification link again",
      description:
        "Emails a fresh verification link when the address has an unverified account. The answer is the same either way, so it reveals nothing about which addresses are registered. Rate limited per IP, and to 5 mails an hour per email address (whoever asks).",
    },
  })
  .input(resendVerificationInput)
  .output(okOutput)
  .mutation(({ ctx, input }) => ctx.services.accounts.resendVerification(input.email, ctx.request));
