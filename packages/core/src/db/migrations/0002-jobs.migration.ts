import { type Kysely, sql } from "kysely";

/** Jobs, batches and idempotency keys. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table batches (
      id text primary key,
      user_id text not null references "user" ("id") on delete cascade,
      created_at timestamptz not null default now()
    );
    create table jobs (
      id text primary key,
      user_id text not null references "user" ("id") on delete cascade,
      batch_id text references batches (id) on delete cascade,
      batch_index integer,
      status text not null check (status in ('pending', 'done', 'error')),
      workflow text not null check (workflow in ('background_removal', 'object_removal', 'generative_edit')),
      prompt text not null,
      negative_prompt text,
      detect text,
      output_format text not null check (output_format in ('jpeg', 'png', 'webp')),
      quality integer check (quality between 1 and 100),
      webhook_url text,
      input_blob text,
      mask_blob text,
      input_width integer,
      input_height integer,
      result_blob text,
      result_format text,
      width integer,
      height integer,
      credits_used integer not null,
      credits_remaining integer,
      processing_time_ms integer,
      -- Internal: never shown to the client (the spec's generic text is).
      error_reason text,
      -- The submission could not be started (batch item): its message for the client.
      rejection text,
      attempts integer not null default 0,
      claimed_by text,
      claimed_until timestamptz,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz,
      result_expires_at timestamptz
    );
    create index jobs_user_pending_idx on jobs (user_id) where status = 'pending';
    create index jobs_pending_created_idx on jobs (created_at) where status = 'pending';
    create index jobs_batch_idx on jobs (batch_id, batch_index) where batch_id is not null;
    create index jobs_result_expiry_idx on jobs (result_expires_at) where result_blob is not null;
    create table idempotency_keys (
      user_id text not null references "user" ("id") on delete cascade,
      key text not null,
      request_hash text not null,
      -- Written in the same transaction as the jobs; never seen null by another transaction.
      response jsonb,
      created_at timestamptz not null default now(),
      primary key (user_id, key)
    );
    create index idempotency_keys_created_idx on idempotency_keys (created_at);
  `.execute(db);
}
