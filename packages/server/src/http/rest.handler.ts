import { appRouter, isClientError, RetouchError, type Services, toRetouchError } from "@retouch/core";
import { createOpenApiFetchHandler } from "trpc-to-openapi";
import { responseMetaFor } from "./procedure-meta";
import { createHttpContext, type HttpContext } from "./request-context";

/**
 * REST at the spec's paths, served from the router by trpc-to-openapi's fetch
 * adapter. The edge has already read, parsed and checked the body
 * (`c.var.body`): the adapter gets a request carrying its text, never Node's
 * stream, as the tRPC handler does.
 *
 * Two things of the package's are patched (patches/trpc-to-openapi@3.3.0.patch):
 * - the adapter builds its handler for every request, and that handler
 *   generated the whole OpenAPI document to check the router unless NODE_ENV
 *   is "production" (13-20 ms of every request, measured): the check is made
 *   where the document is served, `/openapi.json`, from the same router by the
 *   same generator (discovery.test.ts fetches it);
 * - it coerced a JSON body's values as if they were query strings ("5" would
 *   pass for 5): only a query string is coerced.
 *
 * The adapter writes its own error body (tRPC's code names, and the message
 * of any plain Error); the response carries instead the one error shape of the
 * error table, so clients see `{ code: "email_unverified", message }` and
 * nothing internal.
 */
export function createRestHandler(services: Services) {
  return async (c: HttpContext): Promise<Response> => {
    let failure: RetouchError | undefined;
    const response = await createOpenApiFetchHandler({
      // The routes are mounted at the root.
      endpoint: "/",
      req: adapterRequest(c),
      router: appRouter,
      createContext: () => createHttpContext(services, c),
      responseMeta: responseMetaFor,
      onError: ({ error, path }) => {
        // The host routed the request from the same metadata: the adapter finds its procedure. Should it not
        // (a path the two normalise differently), the answer is the host's 404.
        failure =
          path === undefined && error.code === "NOT_FOUND"
            ? new RetouchError("not_found", `No route for ${c.req.method} ${c.req.path}.`)
            : toRetouchError(error);
        if (!isClientError(failure)) services.logger.error({ err: error, path }, "request failed");
      },
    });
    if (!failure || response.status < 400) return response;
    return new Response(JSON.stringify(failure.toBody()), { status: response.status, headers: response.headers });
  };
}

/**
 * The request as the adapter reads it: HEAD as GET (Hono drops the body; the
 * adapter only knows GET routes), and the body the edge read as its JSON text.
 * A multipart body is the JSON value the edge made of it, so it is sent as
 * JSON. A request without a body sends JSON `null`, which the adapter spreads
 * into no fields, so the operation's schema names what is missing.
 */
function adapterRequest(c: HttpContext): Request {
  const method = c.req.method === "HEAD" ? "GET" : c.req.method;
  const init = { method, headers: c.req.raw.headers, signal: c.req.raw.signal };
  if (method === "GET" || method === "DELETE") return new Request(c.req.url, init);
  if (c.var.body !== undefined && mediaTypeOf(c.req.header("content-type")) === "multipart/form-data") {
    init.headers = new Headers(c.req.raw.headers);
    init.headers.set("content-type", "application/json");
  }
  return new ReadBodyRequest(c.req.url, init, c.var.body?.text ?? "null");
}

/**
 * A request whose body the edge has already read. The adapter asks for its
 * text (and parses it); the text is handed over as it is, not copied into a
 * stream and decoded again: a 10 MB body took 30 ms that way against 13 ms
 * for the parse alone (measured), and held two more copies meanwhile.
 */
class ReadBodyRequest extends Request {
  // A property, as the fetch types declare it.
  override readonly text: () => Promise<string>;

  constructor(url: string, init: RequestInit, text: string) {
    super(url, init);
    this.text = () => Promise.resolve(text);
  }
}

function mediaTypeOf(contentType: string | undefined): string | undefined {
  return contentType?.split(";")[0]?.trim().toLowerCase();
}
