import { errorResponses, type Json, type Operation } from "../discovery/error-responses";

/**
 * The progress stream in the OpenAPI document: served by the host
 * (Server-Sent Events), not by a procedure, so the generator cannot derive it;
 * declared beside its handler, with its own errors. Each `data` is the status
 * endpoint's answer, whose schema is the status operation's.
 */
export function progressStreamPath(): Record<string, Operation> {
  const idParameter = (name: string, prefix: string, what: string): Json => ({
    name,
    in: "query",
    required: false,
    description: `${what} (${prefix}...); send exactly one of \`job_id\` and \`batch_id\``,
    schema: { type: "string" },
  });
  return {
    get: {
      operationId: "processEvents",
      summary: "Progress stream of a job or a batch",
      description:
        "Server-Sent Events instead of polling: one `status` event per change, whose `data` is exactly what `GET /api/process/status` answers for the same id at that moment; the last carries the terminal status with its metadata block, and then the stream ends by itself (for a batch, once every job is terminal). Each event has an `id:` (a job: `0` pending, `1` terminal; a batch: how many of its jobs are terminal); a client that reconnects with `Last-Event-ID` gets only what came after it, and a finished job resumed answers its terminal event again and ends. `:` comments are heartbeats. The dashboard's session cookie is accepted too (its playground follows its own jobs). An account may hold a few streams open at once (RETOUCH_EVENT_STREAMS_PER_ACCOUNT, 10 by default); the next is refused with 429 `too_many_in_flight`.",
      tags: ["Jobs"],
      security: [{ bearerAuth: [] }, { sessionCookie: [] }],
      parameters: [
        idParameter("job_id", "job_", "A job id"),
        idParameter("batch_id", "bat_", "A batch id"),
        {
          name: "Last-Event-ID",
          in: "header",
          required: false,
          description: "The `id` of the last event received, to resume after it",
          schema: { type: "string" },
        },
      ],
      responses: {
        "200": {
          description: "The event stream (`event: status`, `id:`, `data:` the status JSON), ending after the terminal status",
          content: { "text/event-stream": { schema: { type: "string" } } },
        },
        ...errorResponses(["invalid_request", "unauthorized", "not_found", "too_many_in_flight", "internal_error"]),
      },
    },
  };
}
