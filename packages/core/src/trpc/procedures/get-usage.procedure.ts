import { usageOutput } from "../../schemas/jobs.schemas";
import { accountProcedure } from "../trpc";

/** The dashboard's usage chart: images made per day over the last 30 days, by workflow (the session or a key). */
export const getUsage = accountProcedure
  .meta({ errors: [] })
  .output(usageOutput)
  .query(({ ctx }) => ctx.services.jobs.usage(ctx.principal));
