import { createCheckout } from "./procedures/create-checkout.procedure";
import { createKey } from "./procedures/create-key.procedure";
import { createPortal } from "./procedures/create-portal.procedure";
import { getAccount } from "./procedures/get-account.procedure";
import { getBilling } from "./procedures/get-billing.procedure";
import { getCapabilities } from "./procedures/get-capabilities.procedure";
import { getDashboardWebhookSecret } from "./procedures/get-dashboard-webhook-secret.procedure";
import { getPlaygroundJob } from "./procedures/get-playground-job.procedure";
import { getPlaygroundResult } from "./procedures/get-playground-result.procedure";
import { getProcessResult } from "./procedures/get-process-result.procedure";
import { getProcessStatus } from "./procedures/get-process-status.procedure";
import { getSelectionStatus } from "./procedures/get-selection-status.procedure";
import { getSession } from "./procedures/get-session.procedure";
import { getUsage } from "./procedures/get-usage.procedure";
import { getWebhookSecret } from "./procedures/get-webhook-secret.procedure";
import { listConnectedApps } from "./procedures/list-connected-apps.procedure";
import { listJobs } from "./procedures/list-jobs.procedure";
import { listKeys } from "./procedures/list-keys.procedure";
import { listWebhookDeliveries } from "./procedures/list-webhook-deliveries.procedure";
import { refineSelection } from "./procedures/refine-selection.procedure";
import { requestPasswordReset } from "./procedures/request-password-reset.procedure";
import { resendVerification } from "./procedures/resend-verification.procedure";
import { resetPassword } from "./procedures/reset-password.procedure";
import { revokeConnectedApp } from "./procedures/revoke-connected-app.procedure";
import { revokeKey } from "./procedures/revoke-key.procedure";
import { signIn } from "./procedures/sign-in.procedure";
import { signOut } from "./procedures/sign-out.procedure";
import { signUp } from "./procedures/sign-up.procedure";
import { startSelection } from "./procedures/start-selection.procedure";
import { submitPlayground } from "./procedures/submit-playground.procedure";
import { submitProcess } from "./procedures/submit-process.procedure";
import { router } from "./trpc";

/** Every operation of the service, defined once. REST, MCP and the SDK are views of this router. */
export const appRouter = router({
  auth: router({
    signUp,
    signIn,
    resendVerification,
    session: getSession,
    signOut,
    requestPasswordReset,
    resetPassword,
  }),
  account: router({ get: getAccount }),
  keys: router({ list: listKeys, create: createKey, revoke: revokeKey }),
  jobs: router({ list: listJobs, usage: getUsage }),
  process: router({ submit: submitProcess, status: getProcessStatus, result: getProcessResult }),
  // The dashboard's playground on the signed-in session (tRPC only: the REST operations above take a key).
  playground: router({ submit: submitPlayground, job: getPlaygroundJob, result: getPlaygroundResult }),
  webhooks: router({
    secret: getWebhookSecret,
    // The dashboard's read of the secret on the signed-in session (tRPC only: the REST operation above takes a key).
    sessionSecret: getDashboardWebhookSecret,
    deliveries: listWebhookDeliveries,
  }),
  service: router({ capabilities: getCapabilities }),
  connectedApps: router({ list: listConnectedApps, revoke: revokeConnectedApp }),
  selection: router({ status: getSelectionStatus, start: startSelection, refine: refineSelection }),
  billing: router({ state: getBilling, checkout: createCheckout, portal: createPortal }),
});

export type AppRouter = typeof appRouter;
