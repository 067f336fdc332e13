import path from "node:path";
import { fileURLToPath } from "node:url";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import sharp from "sharp";
import { expect } from "vitest";

const rootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
/** `RETOUCH_SCREENSHOTS=1`: the browser tests write the pages docs/dashboard.md shows; otherwise the repository is left as it is. */
const SCREENSHOTS = process.env.RETOUCH_SCREENSHOTS === "1" ? path.join(rootDir, "docs/dashboard") : undefined;

/** No serious or critical axe-core finding on the page as it is now; a finding is named with the elements it is on. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
  expect(
    serious.map(
      (violation) =>
        `${violation.id} (${violation.impact}) ${violation.help}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`,
    ),
    `axe on ${name}`,
  ).toEqual([]);
}

/** A screenshot for docs/dashboard.md, when asked for; secrets on screen are masked. */
export async function screenshot(page: Page, name: string, mask: Locator[] = []): Promise<void> {
  if (!SCREENSHOTS) return;
  const png = await page.screenshot({ mask, fullPage: true, animations: "disabled", caret: "hide" });
  // A palette PNG: a third of the size, no visible difference for flat interface colours.
  await sharp(png)
    .png({ palette: true, quality: 90, effort: 7 })
    .toFile(path.join(SCREENSHOTS, `${name}.png`));
}

export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** Uncaught script errors, in the order they happened. */
  pageErrors: string[];
  /** Console errors reporting a Content-Security-Policy violation. */
  cspViolations: string[];
}

/** A fresh browser context on the service (a desktop viewport, British English) with one page whose errors are recorded. */
export async function openWatchedPage(browser: Browser, baseURL: string): Promise<WatchedPage> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1180, height: 760 }, locale: "en-GB" });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const watched: WatchedPage = { context, page, pageErrors: [], cspViolations: [] };
  page.on("pageerror", (error) => watched.pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error" && /Content.Security.Policy/i.test(message.text())) watched.cspViolations.push(message.text());
  });
  return watched;
}
