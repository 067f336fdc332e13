import type { Migration } from "kysely/migration";
import * as accounts from "./0001-accounts.migration";
import * as jobs from "./0002-jobs.migration";
import * as queue from "./0003-queue.migration";
import * as webhooks from "./0004-webhooks.migration";
import * as rateLimitEvents from "./0005-rate-limit-events.migration";
import * as submitFunction from "./0006-submit-function.migration";
import * as jobFailures from "./0007-job-failures.migration";
import * as jobListing from "./0008-job-listing.migration";
import * as oauthProvider from "./0009-oauth-provider.migration";
import * as submitPrecheck from "./0010-submit-precheck.migration";
import * as queueWorkers from "./0011-queue-workers.migration";
import * as serviceSecrets from "./0012-service-secrets.migration";
import * as billing from "./0013-billing.migration";
import * as jobPlans from "./0014-job-plans.migration";

/**
 * Every schema change, in order. Forward-only: a released migration is never
 * edited or removed; a change is a new file with the next number.
 */
export const migrations: Record<string, Migration> = {
  "0001-accounts": accounts,
  "0002-jobs": jobs,
  "0003-queue": queue,
  "0004-webhooks": webhooks,
  "0005-rate-limit-events": rateLimitEvents,
  "0006-submit-function": submitFunction,
  "0007-job-failures": jobFailures,
  "0008-job-listing": jobListing,
  "0009-oauth-provider": oauthProvider,
  "0010-submit-precheck": submitPrecheck,
  "0011-queue-workers": queueWorkers,
  "0012-service-secrets": serviceSecrets,
  "0013-billing": billing,
  "0014-job-plans": jobPlans,
};
