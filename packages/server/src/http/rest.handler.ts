import type { IncomingMessage, ServerResponse } from "node:http";
import { appRouter, isClientError, type RetouchError, type Services, toRetouchError } from "@retouch/core";
import { createOpenApiNodeHttpHandler } from "trpc-to-openapi";
import { responseMetaFor } from "./procedure-meta";
import { createHttpContext } from "./request-context";

/**
 * REST at the spec's paths, served from the router by trpc-to-openapi.
 * The adapter writes its own error body (with tRPC's code names, and the
 * message of any plain Error); we replace it with the one error shape of the
 * error table, so clients see `{ code: "email_unverified", message }` and
 * nothing internal.
 */
export function createRestHandler(services: Services) {
  const failures = new WeakMap<IncomingMessage, RetouchError>();
  const handler = withoutRouterCheck(() =>
    createOpenApiNodeHttpHandler({
      router: appRouter,
      createContext: ({ req }) => createHttpContext(services, req),
      responseMeta: responseMetaFor,
      onError: ({ error, req, path }) => {
        const domain = toRetouchError(error);
        failures.set(req, domain);
        if (!isClientError(domain)) services.logger.error({ err: error, path }, "request failed");
      },
    }),
  );

  /** `body`: what the host read, parsed and checked; the adapter uses it instead of reading the stream. */
  return async (req: IncomingMessage, res: ServerResponse, body: unknown, next: () => void): Promise<void> => {
    (req as IncomingMessage & { body?: unknown }).body = body;
    const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
    res.end = ((chunk?: unknown) => {
      const failure = failures.get(req);
      return end(failure && res.statusCode >= 400 ? JSON.stringify(failure.toBody()) : chunk);
    }) as ServerResponse["end"];
    await handler(req, res, next);
  };
}

/**
 * The adapter generates the whole OpenAPI document when it is created, only to
 * check the router, unless NODE_ENV is "production": some 60 ms of every start.
 * `/openapi.json` is generated from the same router by the same function (and
 * the tests fetch it), so that check is made there; here it is skipped without
 * changing NODE_ENV for anything else.
 */
function withoutRouterCheck<T>(create: () => T): T {
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    return create();
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
}
