import { appRouter, isClientError, type Services, toRetouchError } from "@retouch/core";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { responseMetaFor } from "./procedure-meta";
import { createHttpContext, type HttpContext } from "./request-context";
import { TRPC_ENDPOINT } from "./route-policy";

/**
 * The typed endpoint the SDK talks to (`@trpc/client`), same router, same
 * errors, through tRPC's fetch adapter. The edge has already read and checked
 * the body: the adapter gets a request carrying that text (it parses JSON
 * itself), never Node's stream.
 */
export function createTrpcHandler(services: Services) {
  return (c: HttpContext): Promise<Response> => {
    const method = c.req.method;
    const text = c.var.body?.text;
    // An empty body is "no input"; GET and HEAD carry none.
    const body = method === "GET" || method === "HEAD" ? undefined : (text ?? "");
    return fetchRequestHandler({
      endpoint: TRPC_ENDPOINT,
      req: new Request(c.req.url, { method, headers: c.req.raw.headers, body, signal: c.req.raw.signal }),
      router: appRouter,
      createContext: () => createHttpContext(services, c),
      // The REST statuses (201, 202) are the spec's; tRPC clients read the envelope, so only errors set a status here.
      responseMeta: ({ ctx, errors }) => responseMetaFor({ ctx, errors, paths: [] }),
      onError: ({ error, path }) => {
        if (!isClientError(toRetouchError(error))) services.logger.error({ err: error, path }, "request failed");
      },
    });
  };
}
