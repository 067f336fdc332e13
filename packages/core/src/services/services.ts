import path from "node:path";
import type { ClientMetadataResourceFetch } from "@better-auth/oauth-provider";
import { createAuth, RESET_PASSWORD_TOKEN_TTL_SECONDS } from "../auth/auth";
import { type BlobStore, FileBlobStore } from "../blobs/blob-store";
import type { Config } from "../config/env";
import type { Db } from "../db/database";
import type { Logger } from "../lib/logger";
import { RetouchMetrics } from "../lib/metrics";
import { PageCursors } from "../lib/page-cursor";
import { UrlSigner } from "../lib/signed-urls";
import type { Mailer } from "../mail/mailer";
import { passwordResetEmail } from "../mail/password-reset-email";
import { verificationEmail } from "../mail/verification-email";
import type { PaymentsPort } from "../payments/payments.port";
import { QUEUE_CHANNEL } from "../processing/agenda-formats";
import { PROCESS_IMAGE, settlementNotice } from "../processing/job-queue";
import { openVocabularyCheck } from "../processing/model-provisioner";
import { ApiKeysStore } from "../stores/api-keys.store";
import { BillingStore } from "../stores/billing.store";
import { JobsStore } from "../stores/jobs.store";
import { OAuthGrantsStore } from "../stores/oauth-grants.store";
import { OperationsStore } from "../stores/operations.store";
import { ProfilesStore } from "../stores/profiles.store";
import { RateLimitsStore } from "../stores/rate-limits.store";
import { UsersStore } from "../stores/users.store";
import { WebhookDeliveriesStore } from "../stores/webhook-deliveries.store";
import { AccountsService, signInAccountKey } from "./accounts.service";
import { AdminService } from "./admin.service";
import { ApiKeysService } from "./api-keys.service";
import { BillingService } from "./billing.service";
import { CapabilitiesService } from "./capabilities.service";
import { JobEventsService } from "./job-events.service";
import { JobsService } from "./jobs.service";
import { McpOAuthService } from "./mcp-oauth.service";
import { OperationsService } from "./operations.service";
import { ProfilesService } from "./profiles.service";
import { SelectionsService } from "./selections.service";
import { SubmissionsService } from "./submissions.service";
import { WebhooksService } from "./webhooks.service";

export interface QueueClient {
  /** Queues a committed job unless its queue entry is already waiting (the maintenance sweep's repair). */
  enqueueOnce(jobId: string): Promise<void>;
  scheduleDelivery(deliveryId: string, at: Date): Promise<void>;
  /** Calls `onSettled` when the job settles (in any process); returns the function that stops watching. */
  watchSettlement(jobId: string, onSettled: () => void): () => void;
}

export interface ServiceDependencies {
  db: Db;
  config: Config;
  logger: Logger;
  mailer: Mailer;
  /** Signs session cookies, verification tokens, result links and page cursors. */
  authSecret: string;
  /** The durable queue (the host owns it): jobs to process, webhook attempts to make. */
  queue: QueueClient;
  /** Where inputs and results are kept (`openBlobStore`); files under the data directory by default. */
  blobs?: BlobStore;
  /** This process's Prometheus registry (one per process); a fresh one by default. */
  metrics?: RetouchMetrics;
  /** For tests: how webhook hosts resolve. */
  resolveHost?: (host: string) => Promise<string[]>;
  /** For tests: how MCP clients' metadata documents (OAuth client ids that are URLs) are fetched. */
  fetchClientMetadata?: ClientMetadataResourceFetch;
}

/** Every domain service, wired once. The HTTP host, the worker, the admin CLI and tests all start here. */
export function createServices(deps: ServiceDependencies) {
  const { db, config, logger, mailer } = deps;
  const profilesStore = new ProfilesStore(db);
  const rateLimitsStore = new RateLimitsStore(db);
  const deliveriesStore = new WebhookDeliveriesStore(db);
  const stores = {
    apiKeys: new ApiKeysStore(db),
    profiles: profilesStore,
    rateLimits: rateLimitsStore,
    users: new UsersStore(db),
    jobs: new JobsStore(db, profilesStore, deliveriesStore, settlementNotice),
    webhookDeliveries: deliveriesStore,
    oauthGrants: new OAuthGrantsStore(db),
    operations: new OperationsStore(db),
    billing: new BillingStore(db, profilesStore),
  };
  if (!deps.blobs && config.blobStore.kind !== "file")
    throw new Error("createServices: pass the store from openBlobStore(config)");
  const blobs: BlobStore = deps.blobs ?? new FileBlobStore(path.join(config.dataDir, "blobs"));
  const metrics = deps.metrics ?? new RetouchMetrics();
  // Every role reads the same queue from the database: an API process's scrape shows it too.
  metrics.collectQueueFrom(() => stores.operations.queueDepth());
  const auth = createAuth({
    db,
    config,
    secret: deps.authSecret,
    logger,
    ...(deps.fetchClientMetadata ? { fetchClientMetadata: deps.fetchClientMetadata } : {}),
    limitClientMetadataRequest: (address) =>
      stores.rateLimits.hit(`oauth-client-metadata:${address}`, {
        limit: config.oauthClientMetadataRateLimit.count,
        windowMs: config.oauthClientMetadataRateLimit.windowMs,
      }),
    sendVerificationLink: async (user, link) => {
      const { location } = await mailer.send(verificationEmail(user, link));
      // Without SMTP the developer reads the link here (or in the .eml file).
      if (mailer.kind === "outbox")
        logger.info({ to: user.email, file: location, link }, "verification email written to the outbox");
    },
    sendPasswordResetLink: async (user, link) => {
      // Not awaited: the answer must take as long for an unknown address, which gets no mail, as for a known one.
      void mailer
        .send(passwordResetEmail(user, link, RESET_PASSWORD_TOKEN_TTL_SECONDS / 60))
        .then(({ location }) => {
          // The link itself is a credential: only where the mail went is logged.
          if (mailer.kind === "outbox")
            logger.info({ to: user.email, file: location }, "password reset email written to the outbox");
        })
        .catch((error: unknown) => logger.error({ err: error, userId: user.id }, "could not send a password reset email"));
    },
    passwordWasReset: async (user) => {
      // The reset link came to the address: using it proves the address as a verification link does.
      await stores.users.markEmailVerified(user.id);
      // Whoever had the old password may have connected an app: its tokens would outlive the sessions.
      const revoked = await stores.oauthGrants.revokeTokensForUser(user.id);
      // The lock guarded the old password; the owner just proved control of the address and must get in at once.
      await stores.rateLimits.clear([signInAccountKey(user.email)]);
      logger.info({ userId: user.id, oauthTokensRevoked: revoked }, "password reset: OAuth tokens revoked, sign-in lock lifted");
    },
  });
  const profiles = new ProfilesService(stores.profiles, config);
  const paymentsSettings = config.payments;
  let paymentsPort: Promise<PaymentsPort> | undefined;
  // Loaded on first use: a server without payments never loads the Stripe SDK, one with them not at start.
  const loadPayments =
    paymentsSettings.provider === "stripe"
      ? () => {
          paymentsPort ??= import("../payments/stripe.adapter").then(
            ({ StripePayments }) => new StripePayments(paymentsSettings),
          );
          return paymentsPort;
        }
      : undefined;
  const jobsService = new JobsService(
    stores.jobs,
    new UrlSigner(deps.authSecret),
    config,
    new PageCursors(deps.authSecret),
    deps.queue,
    blobs,
  );
  const webhooks = new WebhooksService({
    deliveries: stores.webhookDeliveries,
    jobs: stores.jobs,
    jobsService,
    profiles,
    config,
    logger,
    scheduleDelivery: (deliveryId, at) => deps.queue.scheduleDelivery(deliveryId, at),
    metrics,
    ...(deps.resolveHost ? { resolveHost: deps.resolveHost } : {}),
  });
  return {
    config,
    logger,
    stores,
    blobs,
    queue: deps.queue,
    auth,
    profiles,
    submissions: new SubmissionsService({
      jobs: stores.jobs,
      blobs,
      config,
      logger,
      queue: { jobName: PROCESS_IMAGE, channel: QUEUE_CHANNEL },
      ...(deps.resolveHost ? { resolveHost: deps.resolveHost } : {}),
      openVocabulary: openVocabularyCheck(config),
    }),
    jobs: jobsService,
    jobEvents: new JobEventsService(jobsService, deps.queue, config),
    webhooks,
    accounts: new AccountsService({ auth, profiles, jobs: stores.jobs, rateLimits: stores.rateLimits, config, logger }),
    apiKeys: new ApiKeysService(stores.apiKeys),
    billing: new BillingService({
      payments: loadPayments,
      store: stores.billing,
      profiles,
      config,
      logger,
    }),
    mcpOAuth: new McpOAuthService({
      auth,
      users: stores.users,
      grants: stores.oauthGrants,
      rateLimits: stores.rateLimits,
      config,
    }),
    capabilities: new CapabilitiesService(config),
    /** /readyz and /metrics. */
    operations: new OperationsService({ store: stores.operations, blobs, config, logger, metrics }),
    metrics,
    /** Click-to-select; the host gives it the engine pool (`useEngine`) once it has one. */
    selections: new SelectionsService({ config, rateLimits: stores.rateLimits, logger }),
  };
}

export type Services = ReturnType<typeof createServices>;

/** Operator actions only (`pnpm retouch admin`): no mail, no queue, no HTTP. */
export function createAdminService(deps: { db: Db; config: Config }): AdminService {
  return new AdminService(new UsersStore(deps.db), new ProfilesService(new ProfilesStore(deps.db), deps.config));
}
