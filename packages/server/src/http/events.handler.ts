import { type ProgressStream, RetouchError, type Services } from "@retouch/core";
import { streamSSE } from "hono/streaming";
import type { HttpContext } from "./request-context";

/** The progress stream of a job or a batch (Server-Sent Events). */
export const PROCESS_EVENTS_PATH = "/api/process/events";
/** The SSE event name of every status event (the status endpoint's JSON in `data`). */
export const STATUS_EVENT = "status";

/**
 * `GET /api/process/events?job_id=…|batch_id=…`: one `status` event per
 * change, each with an `id:` (resumable with `Last-Event-ID`), then the
 * stream ends by itself once the job (every job of the batch) is terminal.
 *
 * It passes the same edge as every route (route-policy.ts: an API key, or the
 * dashboard's session, from the headers before anything else; no body; the
 * query checked). Time is the
 * deliberate exception: Node's request timeout bounds only receiving the
 * request (complete at once for a GET), and the socket idle timeout
 * (RETOUCH_SOCKET_IDLE_TIMEOUT) is kept at bay by the heartbeat comments
 * (RETOUCH_EVENT_STREAM_HEARTBEAT), which are also what keeps a proxy from
 * closing a quiet stream. A stream lasts as long as its job, which the job
 * timeout bounds; server shutdown ends every stream at once.
 */
export function createEventsHandler(services: Services) {
  const { jobEvents, config } = services;
  return async (c: HttpContext): Promise<Response> => {
    const principal = c.var.principal;
    // The edge authenticated the request (its policy asks for a key); this only narrows the type.
    if (!principal) throw new RetouchError("unauthorized");
    const query = Object.fromEntries(new URL(c.req.url).searchParams);
    // Refusals (400, 404, 429) are ordinary JSON answers, before any byte of the stream.
    const progress: ProgressStream = await jobEvents.openStream(principal, query, c.req.header("last-event-id"));
    // Through a proxy that buffers (nginx), each event must still go out at once.
    c.header("X-Accel-Buffering", "no");
    return streamSSE(c, async (stream) => {
      const ended = new AbortController();
      stream.onAbort(() => ended.abort());
      c.env.outgoing.once("close", () => ended.abort());
      const heartbeat = setInterval(() => void stream.write(": heartbeat\n\n"), config.eventStreamHeartbeatMs);
      try {
        // Opens the stream at once for the client (and any proxy) before the first state is read.
        await stream.write(": connected\n\n");
        for await (const event of progress.events(ended.signal)) {
          await stream.writeSSE({ event: STATUS_EVENT, id: event.id, data: JSON.stringify(event.data) });
        }
      } catch (error) {
        // The stream is already under way: its status line is sent. The client reconnects (or polls).
        services.logger.warn({ err: error, requestId: c.var.requestId }, "progress stream ended by an error");
      } finally {
        clearInterval(heartbeat);
        progress.release();
      }
    });
  };
}
