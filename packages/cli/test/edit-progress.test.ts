import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { productPhoto } from "../../../test/support/images";
import { type RecordingProxy, startRecordingProxy } from "../../../test/support/recording-proxy";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { type CliRun, runCli } from "./run-cli";

/**
 * The built binary's `edit` waits through the SDK's one wait: a batch's
 * progress comes from the progress stream (no polling loop of its own), and
 * when the stream is cut it carries on by polling. A loopback proxy in front
 * of the service records which it was.
 */

let app: TestApp;
let proxy: RecordingProxy;
let home: string;
let photos: string;
let key: string;

function cli(args: string[]): Promise<CliRun> {
  return runCli(args, {
    HOME: home,
    RETOUCH_CONFIG: path.join(home, "retouch.json"),
    RETOUCH_BASE_URL: proxy.url,
    RETOUCH_API_KEY: key,
  });
}

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  proxy = await startRecordingProxy(app.url);
  key = (await keyedAccount(app, { plan: "core", credits: 50 })).key;
  home = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-progress-"));
  photos = path.join(home, "photos");
  await mkdir(photos);
  for (const name of ["a.png", "b.png", "c.png"]) await writeFile(path.join(photos, name), await productPhoto());
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await app?.close();
  await rm(home, { recursive: true, force: true });
});

describe("retouch edit's progress", { timeout: 60_000 }, () => {
  it("follows each batch on the progress stream: every image reported as it settles, no status polling", async () => {
    proxy.seen.length = 0;
    const out = path.join(home, "streamed");
    const result = await cli(["edit", photos, "make it sepia", "-o", out, "--batch-size", "2"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^3 of 3 images edited in/m);
    for (const name of ["a", "b", "c"]) expect(result.stderr).toMatch(new RegExp(`✓ .*${name}\\.png → `));
    expect((await readdir(out)).sort()).toEqual(["a.retouched.jpg", "b.retouched.jpg", "c.retouched.jpg"]);
    // Two batches (2 + 1), each followed on one stream.
    expect(proxy.streams()).toHaveLength(2);
    expect(proxy.streams().every((request) => request.includes("batch_id=bat_"))).toBe(true);
    expect(proxy.polls()).toEqual([]);
  });

  it("one image: its wait is the stream too", async () => {
    proxy.seen.length = 0;
    const result = await cli(["edit", path.join(photos, "a.png"), "make it sepia", "-o", path.join(home, "one.jpg")]);
    expect(result.code, result.stderr).toBe(0);
    expect(proxy.streams()).toHaveLength(1);
    expect(proxy.polls()).toEqual([]);
  });

  it("carries on by polling when the stream is cut, and still saves every image", async () => {
    proxy.seen.length = 0;
    proxy.cut = true;
    try {
      const out = path.join(home, "polled");
      const result = await cli(["edit", photos, "make it sepia", "-o", out, "--batch-size", "3", "--json"]);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ done: 3, failed: 0 });
      expect((await readdir(out)).sort()).toEqual(["a.retouched.jpg", "b.retouched.jpg", "c.retouched.jpg"]);
      expect(proxy.streams()).toHaveLength(1);
    } finally {
      proxy.cut = false;
    }
  });
});
