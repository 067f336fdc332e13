import { sessionOutput, signInInput } from "../../schemas/accounts.schemas";
import { sessionResponse } from "../context";
import { publicProcedure } from "../trpc";

export const signIn = publicProcedure
  .meta({
    setCookie: "The session cookie (`retouch.session_token=...`); resend it in a `Cookie` header",
    errors: ["invalid_request", "invalid_credentials", "rate_limited"],
    openapi: {
      method: "POST",
      path: "/auth/sign-in/email",
      protect: false,
      tags: ["Accounts"],
      summary: "Sign in",
      description:
        "Returns a new session (body `token` and a `Set-Cookie` session cookie). Works before the email is verified. Failed sign-ins are limited per address and per account: then 429 with `Retry-After`.",
    },
  })
  .input(signInInput)
  .output(sessionOutput)
  .mutation(async ({ ctx, input }) => sessionResponse(ctx, await ctx.services.accounts.signIn(input, ctx.request)));
