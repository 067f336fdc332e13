import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { webAssetsDirectory } from "@retouch/web";
import { beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../test/support/free-port";
import { spawnRetouch } from "../../../test/support/spawn-retouch";
import { createTestDatabase } from "../../../test/support/test-database";
import { ensureWebBuild, webDistDir } from "../scripts/build-if-stale.mjs";
import { findChromium } from "./support/chromium";

const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

beforeAll(() => {
  ensureWebBuild({ quiet: true });
});

describe("the built dashboard", () => {
  it("is found by webAssetsDirectory() and needs nothing from another host", async () => {
    expect(webAssetsDirectory()).toBe(path.join(webDir, "dist"));
    const html = await readFile(path.join(webDistDir, "index.html"), "utf8");
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);
    expect(assets.some((asset) => /^\/assets\/.+\.js$/.test(asset))).toBe(true);
    for (const asset of assets) {
      // Every script, stylesheet and icon is a file of the build: no CDN, no web font service.
      expect(asset, `${asset} in index.html`).toMatch(/^\/[\w./-]+$/);
      expect(existsSync(path.join(webDistDir, asset)), asset).toBe(true);
    }
    const css = assets.filter((asset) => asset.endsWith(".css"));
    for (const sheet of css)
      expect(await readFile(path.join(webDistDir, sheet), "utf8")).not.toMatch(/url\(\s*["']?(https?:)?\/\//);
  });

  it("is not built again when nothing changed", () => {
    expect(ensureWebBuild({ quiet: true })).toBe(false);
  });

  it("is served at the site URL by the server's bundle, as `pnpm start` runs it", { timeout: 60_000 }, async () => {
    const database = await createTestDatabase();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-web-"));
    const port = await freePort();
    const server = spawnRetouch({
      PORT: String(port),
      HOST: "127.0.0.1",
      RETOUCH_DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      LOG_LEVEL: "info",
    });
    try {
      await server.waitForLog(/Retouch is listening/);
      const base = `http://127.0.0.1:${port}`;
      const built = await readFile(path.join(webDistDir, "index.html"), "utf8");
      for (const route of ["/", "/sign-up", "/dashboard", "/dashboard/keys"]) {
        const page = await fetch(`${base}${route}`, { headers: { accept: "text/html" } });
        expect(page.status, route).toBe(200);
        expect(page.headers.get("content-type"), route).toMatch(/^text\/html/);
        expect(await page.text(), route).toBe(built);
      }
      const script = /src="(\/assets\/[^"]+\.js)"/.exec(built)?.[1] as string;
      const asset = await fetch(`${base}${script}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("content-type")).toMatch(/javascript/);
      // The API keeps its JSON answers.
      const missing = await fetch(`${base}/api/no-such-route`);
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { code: string }).code).toBe("not_found");
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("the browser tests' Chromium", () => {
  it("is Debian's chromium, or the one RETOUCH_CHROMIUM names", () => {
    expect(findChromium({})).toMatch(/chrom/);
    expect(findChromium({ RETOUCH_CHROMIUM: process.execPath })).toBe(process.execPath);
  });

  it("is an error that says what to install when it is missing, never a skipped test", () => {
    expect(() => findChromium({ RETOUCH_CHROMIUM: "/nonexistent/chromium" })).toThrow(
      /RETOUCH_CHROMIUM is \/nonexistent\/chromium/,
    );
  });
});
