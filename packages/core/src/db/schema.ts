import type { OutputFormat, PlannedEdit } from "@retouch/engine";
import type { ColumnType, Generated } from "kysely";

/** A timestamp the database fills in unless told otherwise. */
type CreatedAt = ColumnType<Date, Date | undefined, never>;

// better-auth's tables keep its camelCase column names (it maps them itself).
export interface UserTable {
  id: string;
  name: string;
  email: string;
  emailVerified: boolean;
  image: string | null;
  createdAt: ColumnType<Date, Date | undefined, Date>;
  updatedAt: ColumnType<Date, Date | undefined, Date>;
}

export interface SessionTable {
  id: string;
  expiresAt: Date;
  /** SHA-256 of the session token, never the token itself. */
  token: string;
  createdAt: ColumnType<Date, Date | undefined, Date>;
  updatedAt: Date;
  ipAddress: string | null;
  userAgent: string | null;
  userId: string;
}

export interface ProfileTable {
  user_id: string;
  plan: string;
  credits: number;
  webhook_secret: string;
  /** 0013-billing: the current plan allowance and the ledger id its spending is counted after (bigint). */
  allowance_credits: ColumnType<number, number | undefined, number>;
  allowance_since_ledger_id: ColumnType<string, string | undefined, string>;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export type LedgerReason =
  | "signup_grant"
  | "admin_grant"
  | "job_debit"
  | "job_refund"
  // Payments (0013-billing): each keyed on a Stripe id in `stripe_ref`.
  | "pack_purchase"
  | "plan_allowance"
  | "plan_allowance_expiry"
  | "refund_clawback"
  | "dispute_clawback";

export interface CreditLedgerTable {
  id: Generated<string>;
  user_id: string;
  delta: number;
  balance_after: number;
  reason: LedgerReason;
  job_id: string | null;
  note: string | null;
  /** The Stripe object a payment grant or claw-back comes from (unique with the reason). */
  stripe_ref: ColumnType<string | null, string | null | undefined, never>;
  created_at: CreatedAt;
}

export interface ApiKeyTable {
  id: string;
  user_id: string;
  name: string;
  key_hash: string;
  prefix: string;
  created_at: CreatedAt;
  last_used_at: Date | null;
}

/** One row per limited key: the times (ms since the epoch) of its events still inside the window. */
export interface RateLimitEventTable {
  key: string;
  /** bigint[]: node-postgres reads each element as a string. */
  hits: ColumnType<string[], number[], number[]>;
}

export type JobStatus = "pending" | "done" | "error";
export type JobWorkflow = "background_removal" | "object_removal" | "generative_edit";
/** A job's output format: the engine's list (a column's values, so a format added there needs no migration here). */
export type ImageFormat = OutputFormat;

export interface BatchTable {
  id: string;
  user_id: string;
  created_at: CreatedAt;
}

export interface JobTable {
  id: string;
  user_id: string;
  batch_id: string | null;
  batch_index: number | null;
  status: JobStatus;
  workflow: JobWorkflow;
  prompt: string;
  negative_prompt: string | null;
  detect: string | null;
  output_format: ImageFormat;
  quality: number | null;
  webhook_url: string | null;
  input_blob: string | null;
  mask_blob: string | null;
  input_width: number | null;
  input_height: number | null;
  result_blob: string | null;
  result_format: ImageFormat | null;
  width: number | null;
  height: number | null;
  credits_used: number;
  credits_remaining: number | null;
  processing_time_ms: number | null;
  /** Internal: the whole account of a failure, for the logs; never shown to clients. */
  error_reason: string | null;
  /** A job failure code (errors/job-failure-codes.ts) and its sentence for the client; null unless failed. */
  error_code: string | null;
  error_message: string | null;
  rejection: string | null;
  /**
   * The edit plan the submission accepted (the engine's PlannedEdit), executed by the worker as stored;
   * null for a job queued before plans were stored (migration 0014) and for a rejected batch item.
   */
  plan: ColumnType<PlannedEdit | null, string | null, string | null>;
  /** Set when a hosted provider made the edit: its name, model and the time spent waiting on it. */
  provider: string | null;
  provider_model: string | null;
  upstream_latency_ms: number | null;
  attempts: Generated<number>;
  claimed_by: string | null;
  claimed_until: Date | null;
  created_at: CreatedAt;
  started_at: Date | null;
  finished_at: Date | null;
  result_expires_at: Date | null;
}

export interface IdempotencyKeyTable {
  user_id: string;
  key: string;
  request_hash: string;
  response: ColumnType<unknown, string | null, string>;
  created_at: CreatedAt;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookDeliveryTable {
  id: string;
  job_id: string;
  user_id: string;
  url: string;
  status: DeliveryStatus;
  attempts: Generated<number>;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  locked_until: Date | null;
  created_at: CreatedAt;
  delivered_at: Date | null;
}

// The OAuth provider's tables (migration 0009), as far as our own queries read them; better-auth owns their rows.
export interface OAuthClientTable {
  id: string;
  clientId: string;
  name: string | null;
  uri: string | null;
  icon: string | null;
  disabled: boolean | null;
}

export interface OAuthConsentTable {
  id: string;
  clientId: string;
  userId: string | null;
  /** jsonb: the scopes granted. */
  scopes: ColumnType<string[], string, string>;
  createdAt: Date;
  updatedAt: Date;
}

/** The columns shared by access and refresh tokens that our queries touch. */
export interface OAuthTokenTable {
  id: string;
  clientId: string;
  userId: string | null;
  createdAt: Date;
  expiresAt: Date;
  revoked: Date | null;
}

export interface OAuthAccessTokenTable extends OAuthTokenTable {
  /** The refresh token it was made with, if any (deleting that one deletes this one). */
  refreshId: string | null;
}

/** A secret the service generated for itself (0012-service-secrets), shared by every process. */
export interface ServiceSecretTable {
  name: string;
  value: string;
  created_at: CreatedAt;
}

/** 0013-billing: the Stripe customer of an account. */
export interface BillingCustomerTable {
  user_id: string;
  stripe_customer_id: string;
  created_at: CreatedAt;
}

export interface BillingSubscriptionTable {
  stripe_subscription_id: string;
  user_id: string;
  plan: string;
  status: string;
  current_period_end: Date | null;
  cancel_at_period_end: boolean;
  /** bigint: Stripe's event `created` (seconds). */
  event_created: ColumnType<string, number | undefined, number>;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface BillingPurchaseTable {
  id: Generated<string>;
  user_id: string;
  kind: "pack" | "plan";
  plan: string | null;
  credits: number;
  amount: number | null;
  currency: string | null;
  stripe_ref: string;
  stripe_payment_intent: string | null;
  credits_clawed_back: ColumnType<number, number | undefined, number>;
  amount_refunded: ColumnType<number, number | undefined, number>;
  disputed: ColumnType<boolean, boolean | undefined, boolean>;
  period_end: Date | null;
  created_at: CreatedAt;
}

export interface Database {
  user: UserTable;
  session: SessionTable;
  profiles: ProfileTable;
  credit_ledger: CreditLedgerTable;
  api_keys: ApiKeyTable;
  rate_limit_events: RateLimitEventTable;
  batches: BatchTable;
  jobs: JobTable;
  idempotency_keys: IdempotencyKeyTable;
  webhook_deliveries: WebhookDeliveryTable;
  oauthClient: OAuthClientTable;
  oauthConsent: OAuthConsentTable;
  oauthAccessToken: OAuthAccessTokenTable;
  oauthRefreshToken: OAuthTokenTable;
  service_secrets: ServiceSecretTable;
  billing_customers: BillingCustomerTable;
  billing_subscriptions: BillingSubscriptionTable;
  billing_purchases: BillingPurchaseTable;
}
