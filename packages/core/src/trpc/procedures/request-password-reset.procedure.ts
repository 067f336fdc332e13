import { requestPasswordResetInput } from "../../schemas/accounts.schemas";
import { okOutput } from "../../schemas/api-keys.schemas";
import { publicProcedure } from "../trpc";

export const requestPasswordReset = publicProcedure
  .meta({
    errors: ["invalid_request", "rate_limited"],
    openapi: {
      method: "POST",
      path: "/auth/request-password-reset",
      protect: false,
      tags: ["Accounts"],
      summary: "Forgot password: email a reset link",
      description:
        "Emails a link to `{PUBLIC_BASE_URL}/reset-password?token=...` (valid for 1 hour, usable once) when the address has an account. The answer is the same either way, so it reveals nothing about which addresses are registered. `redirect_to` must be a path on this site. Rate limited per IP, and to 5 mails an hour per email address (whoever asks). Setting the new password from the link also marks the address verified: the link proves the inbox as the verification link does.",
    },
  })
  .input(requestPasswordResetInput)
  .output(okOutput)
  .mutation(({ ctx, input }) =>
    ctx.services.accounts.requestPasswordReset({ email: input.email, redirectTo: input.redirect_to }, ctx.request),
  );
