import { z } from "zod";
import { sessionStateOutput } from "../../schemas/accounts.schemas";
import { sessionResponse } from "../context";
import { publicProcedure } from "../trpc";

export const getSession = publicProcedure
  .meta({
    setCookie: "When the session was extended, the refreshed cookie; when it ended, one that clears it",
    errors: [],
    openapi: {
      method: "GET",
      path: "/auth/get-session",
      protect: false,
      tags: ["Accounts"],
      summary: "The current session",
      description:
        "The user and the session behind the session cookie, or `null` when there is none (or it ended): how a browser app knows whether someone is signed in. Never 401.",
    },
  })
  .input(z.object({}).optional())
  .output(sessionStateOutput)
  .query(async ({ ctx }) => sessionResponse(ctx, await ctx.services.accounts.currentSession(ctx.request.headers)).state);
