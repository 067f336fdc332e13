import { resetPasswordInput } from "../../schemas/accounts.schemas";
import { okOutput } from "../../schemas/api-keys.schemas";
import { publicProcedure } from "../trpc";

export const resetPassword = publicProcedure
  .meta({
    errors: ["invalid_request", "reset_token_invalid"],
    openapi: {
      method: "POST",
      path: "/auth/reset-password",
      protect: false,
      tags: ["Accounts"],
      summary: "Set a new password",
      description:
        "Sets the new password with the `token` of an emailed reset link. Every session of the account ends (sign in again); API keys keep working. A token that is wrong, expired or already used is 400 `reset_token_invalid`.",
    },
  })
  .input(resetPasswordInput)
  .output(okOutput)
  .mutation(({ ctx, input }) => ctx.services.accounts.resetPassword({ token: input.token, newPassword: input.new_password }));
