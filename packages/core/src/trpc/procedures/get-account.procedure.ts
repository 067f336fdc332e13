import { z } from "zod";
import { accountOutput } from "../../schemas/accounts.schemas";
import { accountProcedure } from "../trpc";

export const getAccount = accountProcedure
  .meta({
    errors: [],
    openapi: {
      method: "GET",
      path: "/api/account",
      tags: ["Accounts"],
      summary: "The account",
      description:
        "Who is signed in, the plan and its limits, the credit balance, and how many jobs were charged this calendar month (UTC). Works before the email is verified.",
    },
  })
  .input(z.object({}).optional())
  .output(accountOutput)
  .query(({ ctx }) => ctx.services.accounts.overview(ctx.principal));
