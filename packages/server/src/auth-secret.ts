import { readFile } from "node:fs/promises";
import path from "node:path";
import { type Config, randomHex, type ServiceSecretsStore } from "@retouch/core";

/** The name of the signing secret in service_secrets. */
const AUTH_SECRET = "auth";

/**
 * The secret that signs session cookies, verification links, result URLs and
 * page cursors: `RETOUCH_AUTH_SECRET` when set, otherwise one generated on the
 * first start and kept in the database. Every process must sign and verify
 * with the same one, and processes on separate machines share nothing but the
 * database and the store: a secret kept in each data directory (as before)
 * made the result URL a worker signed for a webhook fail on the api.
 * An installation that kept its secret in `$RETOUCH_DATA_DIR/auth-secret`
 * moves it into the database at its next start (only when none is there yet),
 * so its sessions and the links it handed out stay valid; the file is only
 * read, never written.
 */
export async function resolveAuthSecret(
  config: Pick<Config, "authSecret" | "dataDir">,
  secrets: Pick<ServiceSecretsStore, "getOrCreate">,
): Promise<string> {
  if (config.authSecret) return config.authSecret;
  return secrets.getOrCreate(AUTH_SECRET, (await legacySecret(config.dataDir)) ?? randomHex(32));
}

/** The secret an earlier version kept in the data directory, if it is there and usable. */
async function legacySecret(dataDir: string): Promise<string | undefined> {
  try {
    const secret = (await readFile(path.join(dataDir, "auth-secret"), "utf8")).trim();
    return secret.length >= 32 ? secret : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
