import type { Kysely } from "kysely";
import type { Database } from "../db/schema";

export interface OAuthGrantRecord {
  clientId: string;
  clientName: string | null;
  clientUri: string | null;
  clientIcon: string | null;
  scopes: string[];
  grantedAt: Date;
  /** When the app last got an access token (at sign-in or on refresh); null if it never did. */
  lastTokenAt: Date | null;
}

/**
 * What a person has granted OAuth clients (MCP apps), read from the OAuth
 * provider's tables: better-auth writes them, this store lists a person's
 * grants and takes one back whole.
 */
export class OAuthGrantsStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** The person's connected apps, most recently granted first. */
  async listForUser(userId: string): Promise<OAuthGrantRecord[]> {
    const rows = await this.db
      .selectFrom("oauthConsent as consent")
      .innerJoin("oauthClient as client", "client.clientId", "consent.clientId")
      .select([
        "consent.clientId as clientId",
        "client.name as clientName",
        "client.uri as clientUri",
        "client.icon as clientIcon",
        "consent.scopes as scopes",
        "consent.updatedAt as grantedAt",
        (eb) =>
          eb
            .selectFrom("oauthAccessToken as token")
            .select((inner) => inner.fn.max("token.createdAt").as("last"))
            .whereRef("token.clientId", "=", "consent.clientId")
            .where("token.userId", "=", userId)
            .as("lastTokenAt"),
      ])
      .where("consent.userId", "=", userId)
      .orderBy("consent.updatedAt", "desc")
      .orderBy("consent.clientId")
      .execute();
    return rows.map((row) => ({ ...row, lastTokenAt: row.lastTokenAt ?? null }));
  }

  /**
   * Takes back everything the person granted the client, in one transaction:
   * the consent (the next authorization asks again) and every access and
   * refresh token it holds for them (refused from the next request on).
   * False when the person had granted that client nothing.
   */
  async revokeForUser(userId: string, clientId: string, now = new Date()): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const consents = await trx
        .deleteFrom("oauthConsent")
        .where("userId", "=", userId)
        .where("clientId", "=", clientId)
        .executeTakeFirst();
      const revoke = (table: "oauthAccessToken" | "oauthRefreshToken") =>
        trx
          .updateTable(table)
          .set({ revoked: now })
          .where("userId", "=", userId)
          .where("clientId", "=", clientId)
          .where("revoked", "is", null)
          .executeTakeFirst();
      const [access, refresh] = [await revoke("oauthAccessToken"), await revoke("oauthRefreshToken")];
      return Number(consents.numDeletedRows) + Number(access.numUpdatedRows) + Number(refresh.numUpdatedRows) > 0;
    });
  }

  /**
   * Revokes every OAuth access and refresh token the person holds, for every
   * app (a password reset: whoever took the account may have connected one).
   * Consents stay: the person's own apps ask them to sign in again, not to re-approve.
   */
  async revokeTokensForUser(userId: string, now = new Date()): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      let revoked = 0;
      for (const table of ["oauthAccessToken", "oauthRefreshToken"] as const) {
        const result = await trx
          .updateTable(table)
          .set({ revoked: now })
          .where("userId", "=", userId)
          .where("revoked", "is", null)
          .executeTakeFirst();
        revoked += Number(result.numUpdatedRows);
      }
      return revoked;
    });
  }

  /**
   * Deletes access and refresh tokens that expired before `before`: every
   * refresh adds a pair, and nothing else ever removes them. Each app's newest
   * access token per person stays (detached from its refresh token), since
   * Connected apps' "last active" is read from it.
   */
  async deleteExpiredTokens(before: Date): Promise<{ accessTokens: number; refreshTokens: number }> {
    return this.db.transaction().execute(async (trx) => {
      // Ordered down to the id: two tokens made in the same second must give the same pick in both statements.
      const newest = trx
        .selectFrom("oauthAccessToken")
        .select("id")
        .distinctOn(["clientId", "userId"])
        .orderBy("clientId")
        .orderBy("userId")
        .orderBy("createdAt", "desc")
        .orderBy("id", "desc");
      const expiredRefresh = trx.selectFrom("oauthRefreshToken").select("id").where("expiresAt", "<", before);
      // Deleting a refresh token deletes the access tokens made from it (on delete cascade): keep the newest ones.
      await trx
        .updateTable("oauthAccessToken")
        .set({ refreshId: null })
        .where("id", "in", newest)
        .where("refreshId", "in", expiredRefresh)
        .execute();
      const access = await trx
        .deleteFrom("oauthAccessToken")
        .where("expiresAt", "<", before)
        .where("id", "not in", newest)
        .executeTakeFirst();
      const refresh = await trx.deleteFrom("oauthRefreshToken").where("expiresAt", "<", before).executeTakeFirst();
      return { accessTokens: Number(access.numDeletedRows), refreshTokens: Number(refresh.numDeletedRows) };
    });
  }
}
