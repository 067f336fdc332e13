import { processInputSchema, submissionOutput } from "../../schemas/process.schemas";
import { apiKeyProcedure } from "../trpc";

export const submitProcess = apiKeyProcedure
  .meta({
    openapi: {
      method: "POST",
      path: "/api/process",
      tags: ["Jobs"],
      summary: "Submit an edit (one image or a batch)",
      description:
        "Starts one job per image and answers at once with the ids and the remaining balance. 1 credit per image, refunded if the job fails. Send `Idempotency-Key` to retry safely.",
    },
  })
  .input(processInputSchema)
  .output(submissionOutput)
  .mutation(({ ctx, input }) =>
    ctx.services.submissions.submit(ctx.principal, input, ctx.request.headers.get("idempotency-key") ?? undefined),
  );
