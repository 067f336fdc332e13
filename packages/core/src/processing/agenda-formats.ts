/**
 * Agenda's private formats, the one place Retouch writes them down. Retouch
 * reaches past Agenda's API in three places: its migrations create Agenda's
 * table (0003-queue, so processes starting together do not race on CREATE),
 * the submission function inserts queue entries and NOTIFYs in the
 * submitting transaction (0006-submit-function), and the heartbeat frees a
 * dead worker's locks in SQL (queue-workers.store.ts); settlements ride
 * Agenda's state channel (job-queue.ts). Each of those follows what is here,
 * read from the versions below; agenda-formats.test.ts holds this module to
 * the installed libraries and fails when their versions change, so that
 * someone re-reads the formats (and patches/agenda@6.2.6.patch) against them.
 */

/** The library versions these formats were read from (package.json pins both exactly). */
export const AGENDA_FORMATS_READ_FROM = { agenda: "6.2.6", "@agendajs/postgres-backend": "3.0.6" } as const;

/** Agenda's job table, as @agendajs/postgres-backend names it by default. */
export const AGENDA_TABLE = "agenda_jobs";

/** The columns of Agenda's table that Retouch reads or writes itself (the others are Agenda's alone). */
export const AGENDA_COLUMNS = {
  id: "id",
  name: "name",
  priority: "priority",
  nextRunAt: "next_run_at",
  type: "type",
  lockedAt: "locked_at",
  data: "data",
  /** The Agenda instance's `name` that last wrote the row: for a lock, the worker that holds it. */
  lastModifiedBy: "last_modified_by",
} as const;

/** One row of Agenda's table, the columns above. */
export interface AgendaJobRow {
  id: string;
  name: string;
  priority: number;
  next_run_at: Date | null;
  type: "normal" | "single";
  locked_at: Date | null;
  data: Record<string, unknown>;
  last_modified_by: string | null;
}

/**
 * The LISTEN/NOTIFY channel of the queue: new and freed entries are
 * announced on it (the backend's `channelName`).
 */
export const QUEUE_CHANNEL = "agenda:jobs";

/** The channel of job state events (start, complete...): the backend derives it from the queue's channel. */
export function stateChannelOf(channel: string): string {
  return `${channel}:state`;
}

/** What the backend's LISTEN connection reads from QUEUE_CHANNEL (its `serializeNotification`). */
export interface EntryNotification {
  /** The queue entry's id (agenda_jobs.id), not a Retouch job's. */
  jobId: string;
  jobName: string;
  /** ISO 8601, or null: run now. */
  nextRunAt: string | null;
  priority: number;
  /** ISO 8601 with milliseconds, UTC. */
  timestamp: string;
  /** The Agenda instance that sent it; an instance ignores its own. Absent when the database sends it. */
  source?: string;
}

/**
 * An EntryNotification built in SQL, for a row being inserted or freed:
 * `idSql` and `nameSql` are SQL expressions of the entry's id and job name.
 * Due now (nextRunAt null), priority 0: how Retouch enqueues.
 */
export function entryNotificationSql(idSql: string, nameSql: string): string {
  return `json_build_object('jobId', ${idSql}, 'jobName', ${nameSql}, 'nextRunAt', null, 'priority', 0,
    'timestamp', to_char(clock_timestamp() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text`;
}

/** What the backend's LISTEN connection reads from the state channel (its `serializeStateNotification`), the part Retouch sends. */
export interface StateNotification {
  type: "start" | "progress" | "success" | "fail" | "complete" | "retry";
  jobId: string;
  jobName: string;
  timestamp: string;
  source: string;
}

/** A state event sent by the database rather than an Agenda instance: `source` names no instance, so every instance hears it. */
export function stateNotification(event: Omit<StateNotification, "timestamp" | "source">): string {
  const payload: StateNotification = { ...event, timestamp: new Date().toISOString(), source: "retouch-db" };
  return JSON.stringify(payload);
}
