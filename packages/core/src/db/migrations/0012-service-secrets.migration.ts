import { type Kysely, sql } from "kysely";

/**
 * Secrets the service generates for itself when the operator gives none (the
 * session and link signing secret without RETOUCH_AUTH_SECRET). They live in
 * the database every process shares, not in a process's data directory: api
 * and worker processes on separate machines must sign and verify with the
 * same one (a result URL a worker signs for a webhook is verified by the api).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table service_secrets (
      name text primary key,
      value text not null,
      created_at timestamptz not null default now()
    );
  `.execute(db);
}
