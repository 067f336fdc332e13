import { accessSync, constants } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/**
 * Where Chromium is: `RETOUCH_CHROMIUM` when set, else Debian's `chromium`
 * package (which .ci/run installs), else the usual other names. Playwright's
 * own browser download is not reachable from the machines this runs on, so
 * there is no fallback: a missing browser is an error that says what to do.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.RETOUCH_CHROMIUM;
  const candidates = override ? [override] : ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  throw new Error(
    override
      ? `RETOUCH_CHROMIUM is ${override}, which is not an executable file.`
      : "No Chromium found for the dashboard's browser tests: install Debian's package (`apt-get install -y chromium`; " +
          ".ci/run does it) or set RETOUCH_CHROMIUM to a Chromium or Chrome binary.",
  );
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: findChromium(),
    headless: true,
    // Containers: no user namespaces for the sandbox, and a small /dev/shm.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}
