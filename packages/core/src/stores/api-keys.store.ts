import type { Kysely } from "kysely";
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

  /** Finds the key by its hash and records the use, in one statement. */
  async touchByHash(keyHash: string): Promise<KeyOwner | undefined> {
    const row = await this.db
      .updateTable("api_keys")
      .from("user")
      .set({ last_used_at: new Date() })
      .whereRef("user.id", "=", "api_keys.user_id")
      .where("api_keys.key_hash", "=", keyHash)
      .returning([
        "api_keys.id as keyId",
        "api_keys.key_hash as keyHash",
        "api_keys.user_id as userId",
        "user.email as email",
        "user.name as name",
        "user.emailVerified as emailVerified",
      ])
      .executeTakeFirst();
    return row;
  }
}
