import type { Db } from "../db/database";

/** Secrets the service generates for itself, kept in the database every process shares (0012-service-secrets). */
export class ServiceSecretsStore {
  constructor(private readonly db: Db) {}

  /**
   * The secret called `name`: the one already kept, or else `candidate`, kept
   * now. Processes starting at once on separate machines all get the one that
   * was written first (an insert that loses the race changes nothing).
   */
  async getOrCreate(name: string, candidate: string): Promise<string> {
    await this.db
      .insertInto("service_secrets")
      .values({ name, value: candidate })
      .onConflict((conflict) => conflict.column("name").doNothing())
      .execute();
    const row = await this.db.selectFrom("service_secrets").select("value").where("name", "=", name).executeTakeFirstOrThrow();
    return row.value;
  }
}
