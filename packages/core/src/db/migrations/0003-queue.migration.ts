import { type Kysely, sql } from "kysely";

/**
 * Agenda's job table (@agendajs/postgres-backend 3.0.6 schema, frozen here).
 * It is created by our migrations rather than by the backend at connect, so
 * that several processes starting together do not race on CREATE statements.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table agenda_jobs (
      id uuid primary key default gen_random_uuid(),
      name varchar(255) not null,
      priority integer not null default 0,
      next_run_at timestamptz,
      type varchar(10) not null default 'normal' check (type in ('normal', 'single')),
      locked_at timestamptz,
      last_finished_at timestamptz,
      failed_at timestamptz,
      fail_count integer default null,
      fail_reason text,
      repeat_timezone varchar(100),
      last_run_at timestamptz,
      repeat_interval varchar(255),
      data jsonb default '{}'::jsonb,
      repeat_at varchar(255),
      disabled boolean default false,
      progress real,
      fork boolean default false,
      last_modified_by varchar(255),
      debounce_started_at timestamptz,
      start_date timestamptz,
      end_date timestamptz,
      skip_days jsonb,
      created_at timestamptz default now(),
      updated_at timestamptz default now()
    );
    create index agenda_jobs_find_and_lock_idx on agenda_jobs (name, next_run_at, priority desc, locked_at, disabled) where disabled = false;
    create unique index agenda_jobs_single_job_idx on agenda_jobs (name) where type = 'single';
    create index agenda_jobs_locked_at_idx on agenda_jobs (locked_at) where locked_at is not null;
    create index agenda_jobs_next_run_at_idx on agenda_jobs (next_run_at) where next_run_at is not null;
    create function update_agenda_jobs_updated_at() returns trigger as $$
    begin
      new.updated_at = now();
      return new;
    end;
    $$ language plpgsql;
    create trigger agenda_jobs_updated_at_trigger before update on agenda_jobs
      for each row execute function update_agenda_jobs_updated_at();
  `.execute(db);
}
