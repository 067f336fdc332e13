import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { uniqueEmail, verifyEmail } from "../../../test/support/accounts";
import { productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { type CliRun, runCli } from "./run-cli";

let app: TestApp;
let home: string;
let configFile: string;
const email = uniqueEmail("cli");
const password = "cli password 123";

/** Runs the built binary, as a user would. */
function cli(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<CliRun> {
  return runCli(args, { HOME: home, RETOUCH_CONFIG: configFile, RETOUCH_BASE_URL: app.url, ...env }, cwd);
}

beforeAll(async () => {
  // The development flag lets the service fetch image URLs from a loopback server.
  app = await startTestApp({
    RETOUCH_DEFAULT_PLAN: "pro",
    RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
    RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
  });
  home = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-"));
  configFile = path.join(home, "config", "retouch.json");
}, 120_000);

afterAll(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

describe("the retouch binary", () => {
  it("signs up and stores the session in a 0600 file", async () => {
    const result = await cli(["signup", "--email", email, "--name", "Cli User"], { RETOUCH_PASSWORD: password });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`We sent a verification link to ${email}`);
    expect((await stat(configFile)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(configFile, "utf8"));
    expect(stored).toMatchObject({ email, baseUrl: app.url, sessionCookie: expect.stringMatching(/^retouch\.session_token=/) });
  });

  it("explains what to do when the email is not verified yet (exit 3)", async () => {
    const result = await cli(["keys", "create", "laptop"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`verify your email first: open the link we sent to ${email}`);
  });

  it("asks for an API key before editing with only a session (exit 2)", async () => {
    await verifyEmail(app.url, app.outboxDir, email);
    const photo = path.join(home, "session-only.png");
    await writeFile(photo, await productPhoto());
    const result = await cli(["edit", photo, "remove the background"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("retouch keys create <name> --use");
  });

  it("creates a key, keeps it with --use, lists and revokes", async () => {
    const created = await cli(["keys", "create", "laptop", "--use", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout);
    expect(key.key).toMatch(/^pk_/);
    expect(JSON.parse(await readFile(configFile, "utf8")).apiKey).toBe(key.key);

    const listed = await cli(["keys", "list", "--json"]);
    expect(JSON.parse(listed.stdout).keys.map((entry: { id: string }) => entry.id)).toContain(key.id);
    expect(listed.stdout).not.toContain(key.key);
    const human = await cli(["keys", "list"]);
    expect(human.stdout).toMatch(/ID\s+NAME\s+PREFIX/);
    expect(human.stdout).toContain(key.prefix);

    const secret = await cli(["secret"]);
    expect(secret.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);

    const revoked = await cli(["keys", "revoke", key.id, "--quiet"]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toBe("");
    const afterRevoke = await cli(["keys", "list"]);
    expect(afterRevoke.code).toBe(3);
    expect(afterRevoke.stderr).toMatch(/revoked/);
  });

  it("signs in again with the password; a wrong one is exit 3", async () => {
    const wrong = await cli(["login", "--email", email], { RETOUCH_PASSWORD: "not the password" });
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toContain("wrong email or password");
    const right = await cli(["login", "--email", email], { RETOUCH_PASSWORD: password });
    expect(right.code).toBe(0);
    expect((await cli(["keys", "list"])).code).toBe(0);
  });

  it("exits 5 with advice when the server is unreachable, 2 on usage errors", async () => {
    const unreachable = await cli(["keys", "list", "--base-url", "http://127.0.0.1:9"]);
    expect(unreachable.code).toBe(5);
    expect(unreachable.stderr).toContain("is the server running?");
    const usage = await cli(["keys", "revoke"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("missing key id");
    const help = await cli(["keys", "create", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: retouch keys create <name> [--use]");
  });
});

describe("editing", () => {
  let photos: string;
  beforeAll(async () => {
    const login = await cli(["login", "--email", email], { RETOUCH_PASSWORD: password });
    expect(login.code).toBe(0);
    expect((await cli(["keys", "create", "editing", "--use"])).code).toBe(0);
    photos = path.join(home, "photos");
    await mkdir(photos, { recursive: true });
    for (const name of ["a.png", "b.jpg", "c.webp"]) {
      const format = name.endsWith("jpg") ? "jpeg" : name.endsWith("webp") ? "webp" : "png";
      await writeFile(path.join(photos, name), await productPhoto({ format }));
    }
    await writeFile(path.join(photos, "notes.txt"), "not an image");
  });

  it("edits one image and saves it where -o says", async () => {
    const out = path.join(home, "cutout.png");
    const result = await cli(["edit", path.join(photos, "a.png"), "remove the background", "-o", out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Saved .*cutout\.png \(png, 320x240\) in [\d.]+s; \d+ credits left\.$/m);
    // Not a terminal: no spinner frames in the output.
    expect(result.stderr).not.toMatch(/[⠋⠙⠹]/);
    expect(await sharp(out).metadata()).toMatchObject({ format: "png", hasAlpha: true, width: 320 });
  });

  it("prints JSON for scripts, with every option passed through", async () => {
    const copy = path.join(home, "b.jpg");
    await writeFile(copy, await readFile(path.join(photos, "b.jpg")));
    const result = await cli(["edit", copy, "make it black and white", "--format", "webp", "--quality", "70", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const body = JSON.parse(result.stdout);
    // Saved next to the input by default.
    expect(body).toMatchObject({
      job_id: expect.stringMatching(/^job_/),
      format: "webp",
      output: path.join(home, "b.retouched.webp"),
    });
    expect((await sharp(body.output).metadata()).format).toBe("webp");
  });

  it("edits a folder as batches, skipping what is not an image", async () => {
    const out = path.join(home, "batch-out");
    const result = await cli(["edit", photos, "make it sepia", "-o", out, "--batch-size", "2"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout, (await readdir(photos)).join(",")).toMatch(/^3 of 3 images edited in/m);
    expect(result.stderr).toMatch(/✓ .*a\.png → /);
    expect((await readdir(out)).sort()).toEqual(["a.retouched.jpg", "b.retouched.jpg", "c.retouched.jpg"]);
  });

  it("takes a glob", async () => {
    const result = await cli([
      "edit",
      path.join(photos, "*.png"),
      "rotate 90 degrees",
      "--json",
      "-o",
      path.join(home, "glob-out.png"),
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(await sharp(path.join(home, "glob-out.png")).metadata()).toMatchObject({ width: 240, height: 320 });
  });

  it("edits an image from a URL, which the service fetches, and saves it in the current folder", async () => {
    const fetchedBy: string[] = [];
    const photo = await productPhoto({ format: "jpeg" });
    const imageServer = createServer((req, res) => {
      fetchedBy.push(req.headers["user-agent"] ?? "");
      res.writeHead(200).end(photo);
    });
    await new Promise<void>((resolve) => imageServer.listen(0, "127.0.0.1", resolve));
    const cwd = await mkdtemp(path.join(home, "url-"));
    try {
      const url = `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}/shop/red%20ball.jpg?size=large`;
      const result = await cli(["edit", url, "make it black and white", "--json"], {}, cwd);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ format: "jpeg", output: "red ball.retouched.jpg", width: 320 });
      expect(await sharp(path.join(cwd, "red ball.retouched.jpg")).metadata()).toMatchObject({ format: "jpeg", width: 320 });
      expect(fetchedBy).toEqual(["Retouch-ImageFetch/1.0"]);
    } finally {
      await new Promise<void>((resolve) => imageServer.close(() => resolve()));
    }
  });

  it("exits 6 when an edit fails, saying it was refunded", async () => {
    const result = await cli(["edit", path.join(photos, "a.png"), "remove the giraffe"]);
    expect(result.code).toBe(6);
    expect(result.stderr).toMatch(/failed .*refunded/);
  });

  it("says what the server can do, and a prompt it cannot do is refused before it is charged (exit 1)", async () => {
    const found = await cli(["capabilities"]);
    expect(found.code, found.stderr).toBe(0);
    expect(found.stdout).toContain("Generative provider: none");
    expect(found.stdout).toMatch(/black and white: "/);
    expect(JSON.parse((await cli(["capabilities", "--json"])).stdout).detectable_objects).toContain("person");
    const refused = await cli(["edit", path.join(photos, "a.png"), "add a dragon"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('"add a dragon"');
    expect(refused.stderr).toMatch(/remove the background/);
  });

  it("submits without waiting, then follows with status and result", async () => {
    const submitted = await cli(["edit", path.join(photos, "a.png"), "make it brighter", "--no-wait", "--json"]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const jobId = JSON.parse(submitted.stdout).job_id as string;
    // Each look starts the CLI afresh: asked every 200 ms, not more often.
    const status = await vi.waitFor(
      async () => {
        const polled = JSON.parse((await cli(["status", jobId, "--json"])).stdout).status as string;
        if (polled === "pending") throw new Error(`${jobId} still pending`);
        return polled;
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(status).toBe("done");
    const human = await cli(["status", jobId]);
    expect(human.stdout).toContain(`${jobId} is done: jpeg, 320x240`);
    const link = await cli(["result", jobId]);
    expect(link.stdout).toMatch(/\/files\/results\//);
    const out = path.join(home, "brighter.jpg");
    expect((await cli(["result", jobId, "-o", out])).code).toBe(0);
    expect((await sharp(out).metadata()).format).toBe("jpeg");
  });

  it("explains bad options (exit 2) and every command has --help", async () => {
    const bad = await cli(["edit", path.join(photos, "a.png"), "x", "--quality", "500"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--quality must be a whole number from 1 to 100");
    const missing = await cli(["edit", path.join(home, "nope.png"), "x"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no file or folder at");
    for (const command of [
      ["signup"],
      ["login"],
      ["logout"],
      ["keys", "list"],
      ["keys", "create"],
      ["keys", "revoke"],
      ["edit"],
      ["status"],
      ["result"],
      ["secret"],
      ["capabilities"],
    ]) {
      const help = await cli([...command, "--help"]);
      expect(help.code, command.join(" ")).toBe(0);
      expect(help.stdout, command.join(" ")).toContain(`Usage: retouch ${command.join(" ")}`);
    }
  });
});
