import { mkdir, open, readFile } from "node:fs/promises";
import path from "node:path";
import { type Config, randomHex } from "@retouch/core";

/**
 * The secret that signs session cookies and verification links:
 * `RETOUCH_AUTH_SECRET` when set, otherwise one generated on first start and
 * kept (0600) in the data directory so sessions survive restarts.
 */
export async function resolveAuthSecret(config: Pick<Config, "authSecret" | "dataDir">): Promise<string> {
  if (config.authSecret) return config.authSecret;
  const file = path.join(config.dataDir, "auth-secret");
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  try {
    const handle = await open(file, "wx", 0o600);
    const secret = randomHex(32);
    await handle.writeFile(secret);
    await handle.close();
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    // Written by another process a moment ago? Wait for its content.
    for (let attempt = 0; attempt < 50; attempt++) {
      const secret = (await readFile(file, "utf8")).trim();
      if (secret.length >= 32) return secret;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`${file} exists but holds no usable secret; delete it or set RETOUCH_AUTH_SECRET`);
  }
}
