import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { z } from "zod";
import type { ErrorCode } from "../errors/error-codes";
import { RetouchError } from "../errors/retouch-error";
import { authenticate, type ProcedureCredentialKind } from "./authenticate";
import type { Context } from "./context";
import { toRetouchError, trpcCodeFor, trpcErrorData } from "./errors";

/**
 * A multipart body as the host reads it (streamed, with limits): each file
 * part becomes the base64 text of the JSON field of the same name, each text
 * part that field's value, so the operation validates, charges and refuses
 * exactly as it does JSON.
 */
export interface MultipartForm {
  /** File parts; a required one may be replaced by a text part (`image_url` for `image`). */
  files: Record<string, { required: boolean; alternative?: string; description: string }>;
  /** Text parts taken (any other is refused, so a typo is not silently dropped). */
  text: readonly string[];
  /** Text parts that are numbers in the JSON body. */
  numbers: readonly string[];
}

export interface ProcedureMeta extends OpenApiMeta {
  /** Who may call it; set by the builder the procedure starts from (OpenAPI security, and the host's check before the body). */
  auth?: "public" | ProcedureCredentialKind;
  /** The body may carry images: `RETOUCH_MAX_REQUEST_BYTES` applies instead of the 1 MiB of other operations. */
  imageBody?: true;
  /**
   * The domain errors the operation can answer (documented in OpenAPI). The
   * authentication, body-parsing and internal errors are added for every
   * operation that can have them.
   */
  errors?: ErrorCode[];
  /** The operation also takes its body as `multipart/form-data` (curl's `-F`): which parts it reads, and how. */
  multipart?: MultipartForm;
  /** The operation sets or clears the session cookie on its success: what its `Set-Cookie` carries (documented in OpenAPI). */
  setCookie?: string;
  /** Headers the operation sends on its success and on its 429 answers (documented on both in OpenAPI). */
  responseHeaders?: Record<string, { description: string; schema: Record<string, unknown> }>;
  /** HTTP status of a successful REST response (200 unless said otherwise), fixed or chosen from the output. */
  successStatus?: number | ((output: unknown) => number);
  /** Offered to agents as an MCP tool (POST /mcp). */
  mcp?: {
    name: string;
    /** Shown to people in a client's tool list. */
    title: string;
    description: string;
    /**
     * The MCP spec's behaviour hints; a client may use them to decide what to
     * run without asking. Unset hints take the spec's defaults (not read-only,
     * destructive, not idempotent, open world), so say each one that differs.
     */
    annotations: {
      readOnlyHint?: boolean;
      destructiveHint?: boolean;
      idempotentHint?: boolean;
      openWorldHint?: boolean;
    };
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
      return { message: domain.message, code: shape.code, data: trpcErrorData(domain, shape.data.path) };
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

/**
 * The caller the transport already resolved is reused (one key lookup per
 * request); a session never passes for a key. An OAuth principal exists only
 * where the transport accepted an access token for its surface (the MCP
 * endpoint, whose tools are these procedures), so it passes as a key does.
 */
const requireApiKey = t.middleware(async ({ ctx, next }) => {
  const principal =
    ctx.principal?.via === "api_key" || ctx.principal?.via === "oauth"
      ? ctx.principal
      : await authenticate(ctx.services, ctx.request.headers, "api_key");
  if (!principal) throw new RetouchError("unauthorized");
  return next({ ctx: { principal } });
});

const requireKeyOrSession = t.middleware(async ({ ctx, next }) => {
  const principal = ctx.principal ?? (await authenticate(ctx.services, ctx.request.headers, "key_or_session"));
  if (!principal) throw new RetouchError("unauthorized");
  return next({ ctx: { principal } });
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
/** No credentials needed (sign-up, sign-in). */
export const publicProcedure = t.procedure.use(domainErrors).meta({ auth: "public" });
/** `Authorization: Bearer pk_...` only (and, through the MCP endpoint, an OAuth access token issued for it). */
export const apiKeyProcedure = publicProcedure.use(requireApiKey).meta({ auth: "api_key" });
/** A bearer key or the session cookie (the key-management routes). */
export const accountProcedure = publicProcedure.use(requireKeyOrSession).meta({ auth: "key_or_session" });
