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
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export type LedgerReason = "signup_grant" | "admin_grant" | "job_debit" | "job_refund";

export interface CreditLedgerTable {
  id: Generated<string>;
  user_id: string;
  delta: number;
  balance_after: number;
  reason: LedgerReason;
  job_id: string | null;
  note: string | null;
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

export interface RateLimitWindowTable {
  key: string;
  window_start: Date;
  count: number;
}

export interface Database {
  user: UserTable;
  session: SessionTable;
  profiles: ProfileTable;
  credit_ledger: CreditLedgerTable;
  api_keys: ApiKeyTable;
  rate_limit_windows: RateLimitWindowTable;
}
