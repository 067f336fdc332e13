import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The SDK as a user gets it: built, packed, installed from the tarball into
 * an empty project, type-checked without skipLibCheck, and run against a live server.
 */
const execFileAsync = promisify(execFile);
const sdkDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const root = path.resolve(sdkDir, "../..");
let app: TestApp;
let project: string;

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  project = await mkdtemp(path.join(os.tmpdir(), "retouch-sdk-consumer-"));
  await execFileAsync("pnpm", ["pack", "--pack-destination", project], { cwd: sdkDir });
  const tarball = (await readdir(project)).find((file) => file.endsWith(".tgz"));
  if (!tarball) throw new Error("pnpm pack wrote no tarball");
  await writeFile(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  await execFileAsync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", `./${tarball}`], { cwd: project });
}, 180_000);

afterAll(async () => {
  await app.close();
  await rm(project, { recursive: true, force: true });
});

it("passes publint and are-the-types-wrong (ESM only)", async () => {
  const bin = (name: string) => path.join(root, "node_modules/.bin", name);
  const publint = await execFileAsync(bin("publint"), [], { cwd: sdkDir });
  expect(publint.stdout).toMatch(/All good/);
  await execFileAsync(bin("attw"), ["--pack", ".", "--profile", "esm-only", "--format", "ascii"], { cwd: sdkDir });
}, 120_000);

it("has no static Node imports, so browsers and edge runtimes can load it", async () => {
  const bundle = await readFile(path.join(sdkDir, "dist/index.js"), "utf8");
  expect(bundle).not.toMatch(/^import .* from ["']node:/m);
  expect(bundle).not.toMatch(/\brequire\(/);
  // The one Node-only path (reading a file) is a dynamic import behind a variable, invisible to bundlers.
  expect(bundle).toMatch(/import\(\s*(?:\/\*.*?\*\/\s*)?specifier\s*\)/);
});

it("type-checks in a strict project without skipLibCheck: its declarations need no server code", async () => {
  await writeFile(
    path.join(project, "consumer.ts"),
    `import { ApiError, Retouch, verifyWebhook, type JobResult } from "@retouch/sdk";
const retouch = new Retouch({ baseUrl: "http://localhost:3000", apiKey: "pk_..." });
export async function run(): Promise<JobResult & { download(): Promise<Uint8Array> }> {
  const keys = await retouch.listKeys();
  const first: string | undefined = keys[0]?.prefix;
  const raw = await retouch.api.process.status.query({ job_id: "job_x" });
  if ("batch_id" in raw) throw new Error(first);
  try {
    return await retouch.edit("photo.jpg", "remove the background", { format: "png", intervalMs: 2000 });
  } catch (error) {
    if (error instanceof ApiError && error.code === "insufficient_credits") throw error;
    throw error;
  }
}
export const verify = (secret: string, body: string) => verifyWebhook(secret, {}, body);
`,
  );
  await writeFile(
    path.join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        lib: ["ESNext", "DOM"],
        types: [],
      },
      files: ["consumer.ts"],
    }),
  );
  const tsc = path.join(root, "node_modules/typescript/bin/tsc");
  const result = await execFileAsync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project }).catch(
    (error: { stdout: string }) => error,
  );
  expect(result.stdout).toBe("");
}, 120_000);

it("runs the README's SDK snippet as written, against a live server", async () => {
  // The README's block that imports the SDK, with only the server's address filled in (its key comes from the environment).
  const readme = await readFile(path.join(root, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
  const snippet = blocks.find((block) => block.includes('from "@retouch/sdk"'));
  expect(snippet, "README.md has a ts block that imports @retouch/sdk").toBeDefined();
  const account = await keyedAccount(app);
  const dir = await mkdtemp(path.join(project, "readme-"));
  const jpeg = await sharp(await productPhoto())
    .jpeg()
    .toBuffer();
  await writeFile(path.join(dir, "photo.jpg"), jpeg);
  await writeFile(path.join(dir, "readme.mjs"), (snippet as string).replaceAll("http://localhost:3000", app.url));
  const run = await execFileAsync(process.execPath, ["readme.mjs"], {
    cwd: dir,
    env: { PATH: process.env.PATH, RETOUCH_API_KEY: account.key },
  }).catch((error: { stderr: string }) => ({ stderr: error.stderr, failed: true }));
  expect("failed" in run ? run.stderr : "").toBe("");
  expect(await sharp(path.join(dir, "cutout.png")).metadata()).toMatchObject({ format: "png", hasAlpha: true });
}, 120_000);

it("runs an edit end to end from the installed package", async () => {
  const account = await keyedAccount(app);
  await writeFile(path.join(project, "photo.png"), await productPhoto());
  await writeFile(
    path.join(project, "edit.mjs"),
    `import { writeFile } from "node:fs/promises";
import { Retouch } from "@retouch/sdk";
const retouch = new Retouch({ baseUrl: process.env.RETOUCH_BASE_URL, apiKey: process.env.RETOUCH_API_KEY });
const result = await retouch.edit("photo.png", "remove the background", { intervalMs: 250 });
await writeFile("out.png", await result.download());
console.log(JSON.stringify({ jobId: result.job_id, format: result.format }));
`,
  );
  const { stdout } = await execFileAsync(process.execPath, ["edit.mjs"], {
    cwd: project,
    env: { ...process.env, RETOUCH_BASE_URL: app.url, RETOUCH_API_KEY: account.key },
  });
  expect(JSON.parse(stdout)).toMatchObject({ jobId: expect.stringMatching(/^job_/), format: "png" });
  expect(await sharp(path.join(project, "out.png")).metadata()).toMatchObject({ format: "png", hasAlpha: true, width: 320 });
}, 120_000);
