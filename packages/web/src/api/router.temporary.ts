/**
 * TEMPORARY (issue 14, web branch): the procedures the **account** branch is adding
 * (`account.get`, `jobs.list`, `auth.session`, `auth.signOut`, `auth.requestPasswordReset`,
 * `auth.resetPassword`), typed from the agreed shapes in the shared notes, on top of the
 * SDK's generated router type. Delete this file at the merge, once the regenerated
 * packages/sdk/src/router.generated.ts has them, and make router.ts re-export the SDK's
 * `AppRouter` directly.
 */
import type { AppRouter as GeneratedRouter } from "@retouch/sdk";
import type { TRPCBuiltRouter, TRPCMutationProcedure, TRPCQueryProcedure } from "@trpc/server";

type Root = GeneratedRouter["_def"]["_config"]["$types"];
type Generated = GeneratedRouter["_def"]["record"];
type Def<TInput, TOutput> = { input: TInput; output: TOutput; meta: object; errorShape: Root["errorShape"] };
type NoInput = undefined | { [key: string]: never };
type JobState = "pending" | "done" | "error";

export type DashboardRouter = TRPCBuiltRouter<
  Root,
  Omit<Generated, "auth"> & {
    auth: Generated["auth"] & {
      session: TRPCQueryProcedure<
        Def<
          NoInput,
          { user: { id: string; email: string; name: string; email_verified: boolean }; session: { expires_at: string } } | null
        >
      >;
      signOut: TRPCMutationProcedure<Def<NoInput, unknown>>;
      requestPasswordReset: TRPCMutationProcedure<Def<{ email: string; redirect_to?: string }, unknown>>;
      resetPassword: TRPCMutationProcedure<Def<{ token: string; new_password: string }, unknown>>;
    };
    account: {
      get: TRPCQueryProcedure<
        Def<
          NoInput,
          {
            email: string;
            name: string;
            email_verified: boolean;
            plan: string;
            credits_remaining: number;
            limits: { per_minute: number; concurrent: number };
            usage: { this_month: number };
          }
        >
      >;
    };
    jobs: {
      list: TRPCQueryProcedure<
        Def<
          { limit?: number; cursor?: string },
          {
            jobs: Array<{
              id: string;
              status: JobState;
              prompt: string;
              created_at: string;
              metadata: unknown;
              error_code: string | null;
              error_message: string | null;
              result_url?: string | null;
            }>;
            next_cursor: string | null;
          }
        >
      >;
    };
  }
>;
