import type pg from "pg";
import { AGENDA_TABLE, type AgendaJobRow, AGENDA_COLUMNS as column, entryNotificationSql } from "../processing/agenda-formats";

/** The queue entries of webhook attempts (job-queue.ts); their `data.deliveryId` names the delivery. */
export const DELIVER_WEBHOOK = "deliver-webhook";

/** A queue entry whose lock was freed because its worker died. */
export interface ReleasedLock {
  id: string;
  name: string;
  /** The dead worker that held it. */
  heldBy: string;
}

/** The prefix of every worker id: only locks taken under such a name are ever freed here. */
export const WORKER_ID_PREFIX = "worker:";

/**
 * Heartbeats of the processes working the queue (0011-queue-workers), and the
 * freeing of the queue locks of the dead ones. On the queue's own pool (it is
 * Agenda's table it touches), so raw SQL rather than the Kysely schema.
 */
export class QueueWorkersStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Records that `id` is alive now (database time). */
  async beat(id: string, heartbeatMs: number): Promise<void> {
    await this.pool.query(
      `insert into queue_workers (id, heartbeat_ms) values ($1, $2)
       on conflict (id) do update set heartbeat_at = now(), heartbeat_ms = excluded.heartbeat_ms`,
      [id, heartbeatMs],
    );
  }

  /** A worker leaving cleanly: its remaining locks are anyone's at once. */
  async remove(id: string): Promise<void> {
    await this.pool.query("delete from queue_workers where id = $1", [id]);
  }

  /**
   * Forgets the workers silent for three of their heartbeat periods and frees
   * what a worker that is not (or no longer) alive held: its queue locks,
   * each announced on `channel` as the queue announces a new entry so a
   * worker takes it at once; its image jobs' claims; the lease of the webhook
   * delivery whose attempt it was running. A worker writes its row before it
   * takes anything, so a holder without a row is dead. An entry that was
   * running has no next run time left: it gets now, to run again (the
   * handlers are idempotent: a claim or a lease decides who works).
   */
  async releaseDead(channel: string): Promise<ReleasedLock[]> {
    // Statements of one WITH see one snapshot: `dead` rows still show in queue_workers, hence both tests.
    // Every data-modifying part runs in full whether or not the final select reads it.
    const gone = (holder: string) =>
      `(${holder} like $1 || '%' and (${holder} in (select id from dead)
        or not exists (select 1 from queue_workers w where w.id = ${holder})))`;
    const result = await this.pool.query<Pick<AgendaJobRow, "id" | "name"> & { held_by: string }>(
      `with dead as (
         delete from queue_workers
         where heartbeat_at < now() - heartbeat_ms * 3 * interval '1 millisecond'
         returning id
       ),
       released as (
         update ${AGENDA_TABLE}
         set ${column.lockedAt} = null, ${column.nextRunAt} = coalesce(${column.nextRunAt}, now())
         where ${column.lockedAt} is not null and ${gone(column.lastModifiedBy)}
         returning ${column.id} as id, ${column.name} as name, ${column.data} as data, ${column.lastModifiedBy} as held_by
       ),
       unclaimed as (
         update jobs set claimed_until = null
         where status = 'pending' and claimed_until > now() and ${gone("claimed_by")}
         returning id
       ),
       unleased as (
         update webhook_deliveries set locked_until = null
         where status = 'pending' and locked_until > now()
           and id in (select data->>'deliveryId' from released where name = $3)
         returning id
       )
       select id, name, held_by, pg_notify($2, ${entryNotificationSql("id", "name")})
       from released`,
      [WORKER_ID_PREFIX, channel, DELIVER_WEBHOOK],
    );
    return result.rows.map((row) => ({ id: row.id, name: row.name, heldBy: row.held_by }));
  }
}
