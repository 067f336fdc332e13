import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema";

export interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export interface KeyOwner {
  keyId: string;
  keyHash: string;
  userId: string;
  email: string;
  name: string;
  emailVerified: boolean;
}

export class ApiKeysStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(key: { id: string; userId: string; name: string; keyHash: string; prefix: string }): Promise<void> {
    await this.db
      .insertInto("api_keys")
      .values({ id: key.id, user_id: key.userId, name: key.name, key_hash: key.keyHash, prefix: key.prefix })
      .execute();
  }

  async listForUser(userId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.db
      .selectFrom("api_keys")
      .select(["id", "name", "prefix", "created_at", "last_used_at"])
      .where("user_id", "=", userId)
      .orderBy("created_at", "desc")
      .orderBy("id")
      .execute();
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      prefix: row.prefix,
      createdAt: row.created_at,
      lastUsedAt: row.last_used_at,
    }));
  }

  /** Deletes the key if it belongs to the user; false when there is no such key of theirs. */
  async deleteForUser(userId: string, id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("api_keys").where("id", "=", id).where("user_id", "=", userId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * Finds the key by its hash and records the use. `last_used_at` is written
   * at most once a second per key, so a busy key does not turn every request
   * into a write (and a disk flush); a read-only lookup commits for free.
   */
  async touchByHash(keyHash: string): Promise<KeyOwner | undefined> {
    const result = await sql<KeyOwner>`
      with found as (
        select k.id, k.key_hash, k.user_id, k.last_used_at, u.email, u.name, u."emailVerified"
        from api_keys k join "user" u on u.id = k.user_id
        where k.key_hash = ${keyHash}
      ), touched as (
        update api_keys set last_used_at = now()
        from found
        where api_keys.id = found.id and (found.last_used_at is null or found.last_used_at < now() - interval '1 second')
      )
      select id as "keyId", key_hash as "keyHash", user_id as "userId", email, name, "emailVerified" from found
    `.execute(this.db);
    return result.rows[0];
  }
}
