import { type Kysely, sql } from "kysely";

/** Settlement callbacks: one delivery per job with a webhook_url, with its attempts' outcome. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table webhook_deliveries (
      id text primary key,
      job_id text not null unique references jobs (id) on delete cascade,
      user_id text not null references "user" ("id") on delete cascade,
      url text not null,
      status text not null check (status in ('pending', 'delivered', 'failed')),
      attempts integer not null default 0,
      last_status_code integer,
      last_error text,
      last_attempt_at timestamptz,
      next_attempt_at timestamptz,
      locked_until timestamptz,
      created_at timestamptz not null default now(),
      delivered_at timestamptz
    );
    create index webhook_deliveries_user_idx on webhook_deliveries (user_id, created_at desc);
    create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'pending';
  `.execute(db);
}
