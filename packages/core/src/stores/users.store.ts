import type { Kysely } from "kysely";
import type { Database } from "../db/schema";

export interface UserRecord {
  id: string;
  email: string;
  name: string;
  emailVerified: boolean;
}

/** Reads and operator-level updates of better-auth's user table. */
export class UsersStore {
  constructor(private readonly db: Kysely<Database>) {}

  async findById(id: string): Promise<UserRecord | undefined> {
    return this.db.selectFrom("user").select(["id", "email", "name", "emailVerified"]).where("id", "=", id).executeTakeFirst();
  }

  async findByEmail(email: string): Promise<UserRecord | undefined> {
    return this.db
      .selectFrom("user")
      .select(["id", "email", "name", "emailVerified"])
      .where("email", "=", email.toLowerCase())
      .executeTakeFirst();
  }

  async markEmailVerified(id: string): Promise<void> {
    await this.db.updateTable("user").set({ emailVerified: true, updatedAt: new Date() }).where("id", "=", id).execute();
  }
}
