import type { IncomingMessage, ServerResponse } from "node:http";
import { appRouter, isClientError, type Services, toRetouchError } from "@retouch/core";
import { nodeHTTPRequestHandler } from "@trpc/server/adapters/node-http";
import { responseMetaFor } from "./procedure-meta";
import { createHttpContext } from "./request-context";
import { TRPC_PREFIX } from "./route-policy";

/**
 * The typed endpoint the SDK talks to (`@trpc/client`), same router, same
 * errors. The host has already read and checked the body: `body` is its text,
 * which the adapter takes as it is (a parsed object it would serialise again).
 */
export function createTrpcHandler(services: Services) {
  return (req: IncomingMessage, res: ServerResponse, pathname: string, body: string | undefined): Promise<void> => {
    // Never let the adapter read the stream itself: an empty string is "no input".
    (req as IncomingMessage & { body?: string }).body = body ?? "";
    return nodeHTTPRequestHandler({
      router: appRouter,
      req,
      res,
      path: pathname.slice(TRPC_PREFIX.length),
      createContext: ({ req: request }) => createHttpContext(services, request),
      // The REST statuses (201, 202) are the spec's; tRPC clients read the envelope, so only errors set a status here.
      responseMeta: ({ ctx, errors }) => responseMetaFor({ ctx, errors, paths: [] }),
      onError: ({ error, path }) => {
        if (!isClientError(toRetouchError(error))) services.logger.error({ err: error, path }, "request failed");
      },
    });
  };
}
