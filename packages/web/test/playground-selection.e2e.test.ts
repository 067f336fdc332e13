import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page, Response } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUpVerified, type TestAccount } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { ensureWebBuild } from "../scripts/build-if-stale.mjs";
import { webAssetsDirectory } from "../src/assets-directory";
import { launchChromium } from "./support/chromium";
import { expectAccessible, openWatchedPage, screenshot, type WatchedPage } from "./support/page-checks";

/**
 * Click-to-select in the playground, in a real browser against a real
 * service: a real photograph, clicks on the helmet the astronaut holds, the
 * outline drawn, a click on her face added and undone, no credit for any of
 * it, then “Remove the selection” runs an ordinary job whose mask is the
 * selection the page showed, byte for byte, and the helmet is filled.
 */

const rootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const PHOTO = path.join(rootDir, "packages/engine/test/fixtures/astronaut.jpg");
/** In the photo's pixels (512 x 512): the dark shell of the helmet she holds (9% of the picture when measured), and her face. */
const HELMET = { x: 380, y: 465 };
const FACE = { x: 224, y: 90 };

let app: TestApp;
let browser: Browser;
let watched: WatchedPage;
let page: Page;
let account: TestAccount;

const eventually = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 30_000, interval: 100 });

async function credits(): Promise<number> {
  const response = await request(app.url, "GET", "/api/account", { cookie: account.cookie });
  expect(response.status, response.text).toBe(200);
  return response.body.credits_remaining;
}

/** Clicks the overlay at a point of the photo; resolves with the service's answer to that click. */
async function clickPhoto(point: { x: number; y: number }, modifiers: ("Shift" | "Alt")[] = []): Promise<Response> {
  const overlay = page.getByTestId("selection-overlay");
  const box = await overlay.boundingBox();
  if (!box) throw new Error("the selection overlay is not on screen");
  const answer = page.waitForResponse((response) => response.url().includes("/trpc/selection.refine"));
  await overlay.click({ position: { x: (point.x / 512) * box.width, y: (point.y / 512) * box.height }, modifiers });
  return answer;
}

/** Pixels of the overlay drawn in the outline's colour. */
function outlinePixels(): Promise<number> {
  return page.getByTestId("selection-overlay").evaluate((element) => {
    // Typed by shape: the tests compile without the DOM's types, and this runs in the page.
    const canvas = element as unknown as {
      width: number;
      height: number;
      getContext(kind: "2d"): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
    };
    const data = canvas.getContext("2d")?.getImageData(0, 0, canvas.width, canvas.height).data ?? new Uint8ClampedArray();
    let count = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] === 255 && data[i + 1] === 214 && data[i + 2] === 10) count++;
    return count;
  });
}

beforeAll(async () => {
  ensureWebBuild({ quiet: true });
  browser = await launchChromium();
  const port = await freePort();
  app = await startTestApp(
    // The result links name the address the browser uses, as the page's Content-Security-Policy requires.
    { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, RETOUCH_QUEUE_POLL_INTERVAL: "200ms" },
    { dashboardDir: webAssetsDirectory() ?? "" },
  );
  account = await signUpVerified(app);
  watched = await openWatchedPage(browser, app.url);
  page = watched.page;
  // The session the dashboard signs in with: the playground needs nothing else (no API key).
  await page
    .context()
    .addCookies([
      { name: account.cookie.split("=")[0] ?? "", value: account.cookie.split("=").slice(1).join("="), url: app.url },
    ]);
  await page.goto("/dashboard");
}, 120_000);

afterAll(async () => {
  await watched?.context.close();
  await browser?.close();
  await app?.close();
});

describe("click-to-select in the playground", { timeout: 90_000 }, () => {
  let selectionMask: Buffer;

  it("selects the helmet with one click, draws its outline, refines and undoes, and charges nothing", async () => {
    await page.goto("/dashboard/playground");
    await page.getByRole("heading", { level: 1, name: "Playground" }).waitFor();
    await page.getByLabel("Image", { exact: true }).setInputFiles(PHOTO);
    await page.getByRole("img", { name: /Your picture, astronaut\.jpg/ }).waitFor();
    await page.getByLabel("Select by clicking", { exact: true }).check();
    const summary = page.getByTestId("selection-summary");
    await eventually(() => summary.textContent()).toBe("Click the object to select it.");
    expect(await outlinePixels()).toBe(0);

    const helmet = await (await clickPhoto(HELMET)).json();
    const helmetShare = helmet.result.data.coverage as number;
    await eventually(() => summary.textContent()).toMatch(/^Selected \d+ % of the picture with 1 point\.$/);
    await eventually(() => outlinePixels()).toBeGreaterThan(200);
    // The helmet, not her: a small part of the picture.
    expect(helmetShare).toBeGreaterThan(0.03);
    expect(helmetShare).toBeLessThan(0.25);

    // Her face too: the selection grows to take her in; undone, it is the helmet again.
    const both = await (await clickPhoto(FACE)).json();
    expect(both.result.data.coverage).toBeGreaterThan(helmetShare + 0.2);
    await eventually(() => summary.textContent()).toContain("with 2 points");
    const undone = page.waitForResponse((response) => response.url().includes("/trpc/selection.refine"));
    await page.getByRole("button", { name: "Undo the last point" }).click();
    const again = await (await undone).json();
    expect(again.result.data.coverage).toBeCloseTo(helmetShare, 5);
    await eventually(() => summary.textContent()).toContain("with 1 point.");
    selectionMask = Buffer.from(again.result.data.mask, "base64");

    // A Shift-click leaves a spot out: a point on her face, outside the helmet, leaves the helmet selected.
    const excluded = await (await clickPhoto(FACE, ["Shift"])).json();
    expect(excluded.result.data.coverage).toBeLessThan(helmetShare + 0.05);
    await eventually(() => summary.textContent()).toContain("with 2 points");
    selectionMask = Buffer.from(excluded.result.data.mask, "base64");

    await expectAccessible(page, "playground selecting by clicking");
    await screenshot(page, "playground-selection");
    // Five answers from the segmenter, no credit.
    expect(await credits()).toBe(10);
  });

  it("removes the selection: a job whose mask is the selection shown, and the helmet filled", async () => {
    const submitted = page.waitForRequest((sent) => sent.url().includes("/trpc/playground.submit"));
    await page.getByRole("button", { name: "Remove the selection" }).click();
    // The mask the job was sent is the selection's PNG as the service answered the last click, unchanged.
    const body = JSON.parse((await submitted).postData() ?? "{}");
    expect(Buffer.from(body.mask, "base64").equals(selectionMask)).toBe(true);
    const result = page.getByAltText("Result", { exact: true });
    await result.waitFor({ timeout: 60_000 });
    expect(await page.getByLabel("Prompt", { exact: true }).inputValue()).toBe("remove the selection");
    await eventually(() => credits()).toBe(9);

    const jobs = await request(app.url, "GET", "/api/jobs", { cookie: account.cookie });
    const [job] = jobs.body.jobs;
    expect(job.status).toBe("done");
    expect(job.prompt).toBe("remove the selection");

    // The edit is where the selection is: the helmet changed, the rest of the picture hardly.
    const original = await sharp(await readFile(PHOTO))
      .greyscale()
      .raw()
      .toBuffer();
    const edited = await sharp(Buffer.from(await (await fetch(job.result_url)).arrayBuffer()))
      .greyscale()
      .raw()
      .toBuffer();
    const mask = await sharp(selectionMask).greyscale().resize(512, 512, { fit: "fill" }).raw().toBuffer();
    const change = { inside: 0, insideCount: 0, outside: 0, outsideCount: 0 };
    for (let i = 0; i < original.length; i++) {
      const delta = Math.abs((original[i] ?? 0) - (edited[i] ?? 0));
      if ((mask[i] ?? 0) >= 128) {
        change.inside += delta;
        change.insideCount++;
      } else {
        change.outside += delta;
        change.outsideCount++;
      }
    }
    expect(change.inside / change.insideCount).toBeGreaterThan(4 * (change.outside / change.outsideCount));
  });

  it("ran without a script error or a Content-Security-Policy violation", () => {
    expect(watched.pageErrors).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
  });
});
