import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The CLI as a user gets it before it is on the registry (README, "Before publication"): both
 * packages packed by pnpm, accepted by `npm publish --dry-run`, publint and are-the-types-wrong,
 * installed from the tarballs into an empty project, and its `retouch` binary run against a live server.
 */
const execFileAsync = promisify(execFile);
const cliDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const root = path.resolve(cliDir, "../..");
const sdkDir = path.join(root, "packages/sdk");
const bin = (name: string) => path.join(root, "node_modules/.bin", name);
let app: TestApp;
let project: string;
const tarballs: Record<"sdk" | "cli", string> = { sdk: "", cli: "" };

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  project = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-consumer-"));
  // global-setup built both packages; packing never rebuilds them (a rebuild would race the other files using dist/).
  for (const [name, dir] of [
    ["sdk", sdkDir],
    ["cli", cliDir],
  ] as const) {
    const before = new Set(await readdir(project));
    await execFileAsync("pnpm", ["pack", "--pack-destination", project], { cwd: dir });
    const tarball = (await readdir(project)).find((file) => file.endsWith(".tgz") && !before.has(file));
    if (!tarball) throw new Error(`pnpm pack wrote no tarball for ${name}`);
    tarballs[name] = tarball;
  }
  await writeFile(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  // Both at once: the CLI's dependency on @retouch/sdk is met by the SDK's tarball, never by the registry.
  await execFileAsync(
    "npm",
    ["install", "--no-audit", "--no-fund", "--prefer-offline", `./${tarballs.sdk}`, `./${tarballs.cli}`],
    { cwd: project },
  );
}, 180_000);

afterAll(async () => {
  await app?.close();
  if (project) await rm(project, { recursive: true, force: true });
});

describe("publishable", () => {
  it("packs with pnpm's workspace ranges replaced by real versions, public, with what a registry page needs", async () => {
    const { stdout } = await execFileAsync("tar", ["-xzOf", tarballs.cli, "package/package.json"], { cwd: project });
    const manifest = JSON.parse(stdout);
    const sdkVersion = JSON.parse(await readFile(path.join(sdkDir, "package.json"), "utf8")).version;
    expect(manifest.dependencies).toEqual({ "@retouch/sdk": sdkVersion });
    expect(stdout).not.toContain("workspace:");
    expect(manifest).toMatchObject({
      bin: { retouch: "./dist/cli.js" },
      publishConfig: { access: "public" },
      license: "MIT",
      repository: { directory: "packages/cli" },
    });
    const listing = await execFileAsync("tar", ["-tzf", tarballs.cli], { cwd: project });
    expect(listing.stdout.split("\n").filter(Boolean).sort()).toEqual([
      "package/README.md",
      "package/dist/cli.js",
      "package/package.json",
    ]);
  });

  it("is accepted by npm publish --dry-run, both packages, as packed (nothing is sent)", async () => {
    for (const tarball of [tarballs.sdk, tarballs.cli]) {
      const result = await execFileAsync("npm", ["publish", "--dry-run", "--json", `./${tarball}`], { cwd: project });
      // npm prints its JSON summary after any notices; the last object is the package.
      const summary = JSON.parse(result.stdout.slice(result.stdout.indexOf("{")));
      const name = tarball.startsWith("retouch-cli") ? "@retouch/cli" : "@retouch/sdk";
      expect(summary[name] ?? summary).toMatchObject({ name, files: expect.any(Array) });
    }
  }, 120_000);

  it("passes publint and are-the-types-wrong (a binary only: no types to get wrong)", async () => {
    const publint = await execFileAsync(bin("publint"), ["--strict"], { cwd: cliDir });
    expect(publint.stdout).toMatch(/All good/);
    const attw = await execFileAsync(bin("attw"), ["--pack", ".", "--format", "ascii"], { cwd: cliDir });
    expect(attw.stdout).toMatch(/does not contain types/);
  }, 120_000);

  it("has a pending changeset that releases both together, and never a private package", async () => {
    await execFileAsync(bin("changeset"), ["status", `--output=${path.join(project, "changesets.json")}`], { cwd: root });
    const status = JSON.parse(await readFile(path.join(project, "changesets.json"), "utf8")) as {
      releases: Array<{ name: string; type: string; newVersion?: string }>;
    };
    const released = status.releases.filter((release) => release.type !== "none");
    expect(released.map((release) => release.name).sort()).toEqual(["@retouch/cli", "@retouch/sdk"]);
    expect(new Set(released.map((release) => release.newVersion)).size).toBe(1);
    const manifest = JSON.parse(await readFile(path.join(root, "package.json"), "utf8"));
    expect(manifest.scripts.release).toMatch(/changeset publish$/);
  }, 60_000);
});

describe("installed from the tarballs", () => {
  it("runs `retouch edit` end to end against a live server", async () => {
    const account = await keyedAccount(app);
    await writeFile(path.join(project, "photo.png"), await productPhoto());
    const { stdout, stderr } = await execFileAsync(
      path.join(project, "node_modules/.bin/retouch"),
      ["edit", "photo.png", "remove the background", "-o", "cutout.png"],
      {
        cwd: project,
        env: {
          PATH: process.env.PATH,
          HOME: project,
          RETOUCH_CONFIG: path.join(project, "retouch.json"),
          RETOUCH_BASE_URL: app.url,
          RETOUCH_API_KEY: account.key,
        },
      },
    );
    expect(stdout + stderr).toMatch(/cutout\.png/);
    expect(await sharp(path.join(project, "cutout.png")).metadata()).toMatchObject({ format: "png", hasAlpha: true });
  }, 120_000);
});
