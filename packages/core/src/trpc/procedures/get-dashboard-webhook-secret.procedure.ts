import { z } from "zod";
import { webhookSecretOutput } from "../../schemas/webhooks.schemas";
import { accountProcedure } from "../trpc";

/**
 * The webhook signing secret for the dashboard, on the signed-in session
 * (GET /api/webhooks/secret takes a key only), so the Webhooks page needs no
 * per-tab key. tRPC only, like `playground.*`: not on REST or MCP. A query:
 * another site's page cannot read the answer (no CORS), and the session
 * cookie is not sent on its cross-site requests (SameSite=Lax).
 */
export const getDashboardWebhookSecret = accountProcedure
  .meta({ errors: [] })
  .input(z.object({}).optional())
  .output(webhookSecretOutput)
  .query(({ ctx }) => ctx.services.webhooks.secrets(ctx.principal.userId));
