import { type Kysely, sql } from "kysely";

/** Accounts: better-auth's tables, profiles with the credit balance, the ledger, API keys, rate windows. */
export async function up(db: Kysely<unknown>): Promise<void> {
  // better-auth 1.7 schema (generated with its getMigrations, then frozen here).
  await sql`
    create table "user" (
      "id" text not null primary key,
      "name" text not null,
      "email" text not null unique,
      "emailVerified" boolean not null,
      "image" text,
      "createdAt" timestamptz default current_timestamp not null,
      "updatedAt" timestamptz default current_timestamp not null
    );
    create table "session" (
      "id" text not null primary key,
      "expiresAt" timestamptz not null,
      "token" text not null unique,
      "createdAt" timestamptz default current_timestamp not null,
      "updatedAt" timestamptz not null,
      "ipAddress" text,
      "userAgent" text,
      "userId" text not null references "user" ("id") on delete cascade
    );
    create index "session_userId_idx" on "session" ("userId");
    create table "account" (
      "id" text not null primary key,
      "accountId" text not null,
      "providerId" text not null,
      "userId" text not null references "user" ("id") on delete cascade,
      "accessToken" text,
      "refreshToken" text,
      "idToken" text,
      "accessTokenExpiresAt" timestamptz,
      "refreshTokenExpiresAt" timestamptz,
      "scope" text,
      "password" text,
      "createdAt" timestamptz default current_timestamp not null,
      "updatedAt" timestamptz not null
    );
    create index "account_userId_idx" on "account" ("userId");
    create table "verification" (
      "id" text not null primary key,
      "identifier" text not null,
      "value" text not null,
      "expiresAt" timestamptz not null,
      "createdAt" timestamptz default current_timestamp not null,
      "updatedAt" timestamptz default current_timestamp not null
    );
    create index "verification_identifier_idx" on "verification" ("identifier");
  `.execute(db);

  await sql`
    create table profiles (
      user_id text primary key references "user" ("id") on delete cascade,
      plan text not null check (plan in ('free', 'starter', 'core', 'pro')),
      credits integer not null check (credits >= 0),
      webhook_secret text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create table credit_ledger (
      id bigint generated always as identity primary key,
      user_id text not null references "user" ("id") on delete cascade,
      delta integer not null check (delta <> 0),
      balance_after integer not null check (balance_after >= 0),
      reason text not null check (reason in ('signup_grant', 'admin_grant', 'job_debit', 'job_refund')),
      job_id text,
      note text,
      created_at timestamptz not null default now()
    );
    create index credit_ledger_user_idx on credit_ledger (user_id, id);
    -- A job is debited at most once and refunded at most once, whatever the races.
    create unique index credit_ledger_job_reason_idx on credit_ledger (job_id, reason) where job_id is not null;
    create table api_keys (
      id text primary key,
      user_id text not null references "user" ("id") on delete cascade,
      name text not null,
      key_hash text not null unique,
      prefix text not null,
      created_at timestamptz not null default now(),
      last_used_at timestamptz
    );
    create index api_keys_user_idx on api_keys (user_id, created_at desc);
    create table rate_limit_windows (
      key text not null,
      window_start timestamptz not null,
      count integer not null,
      primary key (key, window_start)
    );
  `.execute(db);
}
