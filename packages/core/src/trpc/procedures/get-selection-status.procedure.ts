import { z } from "zod";
import { selectionStatusOutput } from "../../schemas/selections.schemas";
import { accountProcedure } from "../trpc";

/**
 * Whether click-to-select works on this server (the playground hides it, and
 * says why, when it does not). The `selection.*` procedures are tRPC only: no
 * REST path, no MCP tool; they are the dashboard's.
 */
export const getSelectionStatus = accountProcedure
  .meta({ errors: [] })
  .input(z.object({}).optional())
  .output(selectionStatusOutput)
  .query(({ ctx }) => ctx.services.selections.status());
