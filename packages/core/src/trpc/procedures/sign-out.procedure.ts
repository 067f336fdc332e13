import { z } from "zod";
import { okOutput } from "../../schemas/api-keys.schemas";
import { sessionResponse } from "../context";
import { publicProcedure } from "../trpc";

export const signOut = publicProcedure
  .meta({
    setCookie: "Clears the session cookie (`Max-Age=0`)",
    errors: [],
    openapi: {
      method: "POST",
      path: "/auth/sign-out",
      protect: false,
      tags: ["Accounts"],
      summary: "Sign out",
      description:
        "Ends the session of the session cookie (it stops working at once) and clears the cookie (`Set-Cookie` with `Max-Age=0`). Answers the same without a live session. API keys are not affected.",
    },
  })
  .input(z.object({}).optional())
  .output(okOutput)
  .mutation(async ({ ctx }) => sessionResponse(ctx, await ctx.services.accounts.signOut(ctx.request.headers)));
