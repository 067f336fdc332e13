import type { IncomingMessage, ServerResponse } from "node:http";
import { appRouter, isClientError, type Services, toRetouchError } from "@retouch/core";
import { nodeHTTPRequestHandler } from "@trpc/server/adapters/node-http";
import { responseMetaFor } from "./procedure-meta";
import { createHttpContext } from "./request-context";

export const TRPC_PREFIX = "/trpc/";

/** The typed endpoint the SDK talks to (`@trpc/client`), same router, same errors. */
export function createTrpcHandler(services: Services, maxBodySize: number) {
  return (req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> =>
    nodeHTTPRequestHandler({
      router: appRouter,
      req,
      res,
      path: pathname.slice(TRPC_PREFIX.length),
      maxBodySize,
      createContext: ({ req: request }) => createHttpContext(services, request),
      // The REST statuses (201, 202) are the spec's; tRPC clients read the envelope, so only errors set a status here.
      responseMeta: ({ ctx, errors }) => responseMetaFor({ ctx, errors, paths: [] }),
      onError: ({ error, path }) => {
        if (!isClientError(toRetouchError(error))) services.logger.error({ err: error, path }, "request failed");
      },
    });
}
