import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/** What `retouch login` remembers. Written with 0600 permissions: it holds credentials. */
export interface StoredConfig {
  baseUrl?: string;
  email?: string;
  /** `name=value` of the session cookie from sign-in. */
  sessionCookie?: string;
  apiKey?: string;
}

export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.RETOUCH_CONFIG) return env.RETOUCH_CONFIG;
  const base =
    env.XDG_CONFIG_HOME || (process.platform === "win32" ? env.APPDATA : undefined) || path.join(os.homedir(), ".config");
  return path.join(base ?? os.homedir(), "retouch", "config.json");
}

export async function readConfig(file: string): Promise<StoredConfig> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as StoredConfig;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new Error(`cannot read ${file}: ${(error as Error).message}`);
  }
}

export async function writeConfig(file: string, config: StoredConfig): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temp, 0o600);
  await rename(temp, file);
}
