import { sessionOutput, signUpInput } from "../../schemas/accounts.schemas";
import { sessionResponse } from "../context";
import { publicProcedure } from "../trpc";

export const signUp = publicProcedure
  .meta({
    setCookie: "The session cookie (`retouch.session_token=...`); resend it in a `Cookie` header",
    errors: ["invalid_request", "email_already_registered", "rate_limited"],
    openapi: {
      method: "POST",
      path: "/auth/sign-up/email",
      protect: false,
      tags: ["Accounts"],
      summary: "Create an account",
      description:
        "Creates an account with the sign-up credits, emails a verification link and returns a session (body `token` and a `Set-Cookie` session cookie). Rate limited per IP.",
    },
  })
  .input(signUpInput)
  .output(sessionOutput)
  .mutation(async ({ ctx, input }) => sessionResponse(ctx, await ctx.services.accounts.signUp(input, ctx.request)));
