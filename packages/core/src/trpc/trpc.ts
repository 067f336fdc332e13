import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { z } from "zod";
import type { ErrorCode } from "../errors/error-codes";
import { RetouchError } from "../errors/retouch-error";
import { bearerToken, type Principal } from "../services/principal";
import type { Context } from "./context";
import { toRetouchError, trpcCodeFor } from "./errors";

export interface ProcedureMeta extends OpenApiMeta {
  /** Who may call it; set by the builder the procedure starts from (for the OpenAPI security of each operation). */
  auth?: "public" | "api_key" | "key_or_session";
  /**
   * The domain errors the operation can answer (documented in OpenAPI). The
   * authentication, body-parsing and internal errors are added for every
   * operation that can have them.
   */
  errors?: ErrorCode[];
  /** HTTP status of a successful REST response (200 unless said otherwise), fixed or chosen from the output. */
  successStatus?: number | ((output: unknown) => number);
  /** Offered to agents as an MCP tool (POST /mcp). */
  mcp?: {
    name: string;
    description: string;
    /** The tool's arguments when they are a subset of the procedure's input (default: the input itself). */
    input?: z.ZodObject;
    /** The tool's result when it is one branch of the procedure's output (default: the output itself). */
    output?: z.ZodObject;
  };
}

const t = initTRPC
  .context<Context>()
  .meta<ProcedureMeta>()
  .create({
    // Never send stacks to clients, whatever NODE_ENV says.
    isDev: false,
    errorFormatter: ({ shape, error }) => {
      const domain = toRetouchError(error);
      return {
        message: domain.message,
        code: shape.code,
        data: {
          code: domain.code,
          httpStatus: domain.status,
          ...(domain.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: domain.retryAfterSeconds }),
          ...(domain.issues ? { issues: domain.issues } : {}),
          path: shape.data.path,
        },
      };
    },
  });

/** Domain errors keep their meaning on every transport: map them to the matching tRPC code. */
const domainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof RetouchError) {
    const cause = result.error.cause;
    throw new TRPCError({ code: trpcCodeFor(cause), message: cause.message, cause });
  }
  return result;
});

async function principalFromKey(ctx: Context): Promise<Principal | undefined> {
  const token = bearerToken(ctx.request.headers.get("authorization"));
  return token ? ctx.services.apiKeys.authenticate(token) : undefined;
}

const requireApiKey = t.middleware(async ({ ctx, next }) => {
  const principal = await principalFromKey(ctx);
  if (!principal) throw new RetouchError("unauthorized");
  return next({ ctx: { principal } });
});

const requireKeyOrSession = t.middleware(async ({ ctx, next }) => {
  // A bearer header that is present but wrong is refused, not silently ignored in favour of a cookie.
  const principal = bearerToken(ctx.request.headers.get("authorization"))
    ? await principalFromKey(ctx)
    : await ctx.services.accounts.sessionPrincipal(ctx.request.headers);
  if (!principal) throw new RetouchError("unauthorized");
  return next({ ctx: { principal } });
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
/** No credentials needed (sign-up, sign-in). */
export const publicProcedure = t.procedure.use(domainErrors).meta({ auth: "public" });
/** `Authorization: Bearer pk_...` only. */
export const apiKeyProcedure = publicProcedure.use(requireApiKey).meta({ auth: "api_key" });
/** A bearer key or the session cookie (the key-management routes). */
export const accountProcedure = publicProcedure.use(requireKeyOrSession).meta({ auth: "key_or_session" });
