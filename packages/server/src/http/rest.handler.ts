import { appRouter, isClientError, RetouchError, type Services, toRetouchError } from "@retouch/core";
import { createOpenApiNodeHttpHandler } from "trpc-to-openapi";
import { responseMetaFor } from "./procedure-meta";
import { createHttpContext, type HttpContext } from "./request-context";
import { errorResponse } from "./responses";

type OpenApiHandler = ReturnType<typeof createOpenApiNodeHttpHandler>;
type AdapterRequest = Parameters<OpenApiHandler>[0];
type AdapterResponse = Parameters<OpenApiHandler>[1];

/**
 * REST at the spec's paths, served from the router by trpc-to-openapi, as a
 * handler that answers a fetch `Response`.
 *
 * Not the package's `createOpenApiFetchHandler`, which this mirrors: that one
 * builds a new adapter for every request (and with it, unless NODE_ENV is
 * "production", the whole OpenAPI document, only to check the router), and
 * reads and parses the body again, which the edge has already read, parsed and
 * checked (`c.var.body`). Here the adapter is built once and given the parsed
 * body, as its fetch handler gives it one (a proxy over the request whose
 * `body` is the parsed value).
 *
 * The adapter writes its own error body (tRPC's code names, and the message of
 * any plain Error); the response carries instead the one error shape of the
 * error table, so clients see `{ code: "email_unverified", message }` and
 * nothing internal.
 */
export function createRestHandler(services: Services) {
  const contexts = new WeakMap<object, HttpContext>();
  const failures = new WeakMap<object, RetouchError>();
  const adapter = withoutRouterCheck(() =>
    createOpenApiNodeHttpHandler({
      router: appRouter,
      createContext: ({ req }) => createHttpContext(services, contexts.get(req) as HttpContext),
      responseMeta: responseMetaFor,
      onError: ({ error, req, path }) => {
        const domain = toRetouchError(error);
        failures.set(req, domain);
        if (!isClientError(domain)) services.logger.error({ err: error, path }, "request failed");
      },
    }),
  );

  return (c: HttpContext): Promise<Response> => {
    const body = c.var.body?.value;
    // HEAD is answered as GET without a body (Hono drops it); the adapter only knows GET routes.
    const method = c.req.method === "HEAD" ? "GET" : c.req.method;
    // A multipart body reaches the adapter as the JSON value the edge made of it; the adapter takes only JSON.
    const headers = asJsonHeaders(c);
    const request = new Proxy(c.req.raw, {
      get: (target, property) => {
        if (property === "body") return body;
        if (property === "method") return method;
        if (property === "headers" && headers) return headers;
        return Reflect.get(target, property, target);
      },
    }) as unknown as AdapterRequest;
    contexts.set(request, c);

    return new Promise<Response>((resolve, reject) => {
      const headers = new Headers();
      let status = 200;
      const response = {
        get statusCode() {
          return status;
        },
        set statusCode(code: number) {
          status = code;
        },
        setHeader(name: string, value: string | readonly string[]) {
          if (typeof value === "string") headers.set(name, value);
          else for (const item of value) headers.append(name, item);
        },
        end(chunk?: string) {
          const failure = failures.get(request);
          resolve(
            new Response(failure && status >= 400 ? JSON.stringify(failure.toBody()) : (chunk ?? null), { status, headers }),
          );
        },
      } as unknown as AdapterResponse;
      // The host routed the request from the same metadata: the adapter finds its procedure. Should it not
      // (a path the two normalise differently), the answer is the host's 404.
      const notFound = () => resolve(errorResponse(new RetouchError("not_found", `No route for ${c.req.method} ${c.req.path}.`)));
      adapter(request, response, notFound).catch(reject);
    });
  };
}

/** For a body the edge read as `multipart/form-data`: the request's headers saying JSON, which its value now is. */
function asJsonHeaders(c: HttpContext): Headers | undefined {
  if (c.var.body === undefined || mediaTypeOf(c.req.header("content-type")) !== "multipart/form-data") return undefined;
  const headers = new Headers(c.req.raw.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  return headers;
}

function mediaTypeOf(contentType: string | undefined): string | undefined {
  return contentType?.split(";")[0]?.trim().toLowerCase();
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
