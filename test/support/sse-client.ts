/** One Server-Sent Event as a client reads it. */
export interface SseEvent {
  event: string;
  id: string | undefined;
  data: unknown;
}

/**
 * A progress stream opened over real HTTP: its status and headers, the events
 * as they arrive (`next`), the comments seen so far, and whether the server
 * ended it (`ended`). `close` drops the connection from the client's side.
 */
export interface SseConnection {
  response: Response;
  next(timeoutMs?: number): Promise<SseEvent | undefined>;
  comments: string[];
  ended: Promise<void>;
  close(): void;
}

export async function openEvents(
  baseUrl: string,
  query: string,
  options: { key?: string; lastEventId?: string } = {},
): Promise<SseConnection> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.lastEventId !== undefined) headers["last-event-id"] = options.lastEventId;
  const response = await fetch(`${baseUrl}/api/process/events?${query}`, { headers, signal: controller.signal });
  const queue: SseEvent[] = [];
  const comments: string[] = [];
  let notify: (() => void) | undefined;
  let done = false;
  const ended = (async () => {
    if (!response.body || !response.headers.get("content-type")?.startsWith("text/event-stream")) return;
    const decoder = new TextDecoderStream();
    let buffer = "";
    try {
      for await (const chunk of response.body.pipeThrough(decoder)) {
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event: SseEvent = { event: "message", id: undefined, data: undefined };
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) comments.push(line.slice(1).trim());
            else if (line.startsWith("event: ")) event.event = line.slice(7);
            else if (line.startsWith("id: ")) event.id = line.slice(4);
            else if (line.startsWith("data: ")) data.push(line.slice(6));
          }
          if (data.length > 0) {
            event.data = JSON.parse(data.join("\n"));
            queue.push(event);
            notify?.();
          }
        }
      }
    } catch {
      // Closed by the client (close()) or cut: the events read so far stay.
    } finally {
      done = true;
      notify?.();
    }
  })();
  return {
    response,
    comments,
    ended,
    async next(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (queue.length === 0 && !done) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no event within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          notify = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return queue.shift();
    },
    close: () => controller.abort(),
  };
}
