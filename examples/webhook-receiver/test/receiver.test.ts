import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/** The example receiver, run as a user would (`node server.mjs`), fed by a real Retouch. */
const exampleDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let app: TestApp;
let receiver: ReturnType<typeof spawn>;
let receiverUrl: string;
let output = "";
let secret: string;

async function waitForOutput(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = output.split("\n").find((candidate) => pattern.test(candidate));
    if (line) return line;
    if (Date.now() > deadline) throw new Error(`no ${pattern} in:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const sign = (timestamp: number, body: string) =>
  `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
const post = (body: string, timestamp: number, signature = sign(timestamp, body)) =>
  fetch(receiverUrl, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", "x-retouch-timestamp": String(timestamp), "x-retouch-signature": signature },
  });

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_WEBHOOK_ALLOW_INSECURE: "1", RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  const account = await keyedAccount(app);
  secret = (await request(app.url, "GET", "/api/webhooks/secret", { key: account.key })).body.secret;
  const port = await freePort();
  receiverUrl = `http://127.0.0.1:${port}/`;
  receiver = spawn(process.execPath, ["server.mjs"], {
    cwd: exampleDir,
    env: { PATH: process.env.PATH, RETOUCH_WEBHOOK_SECRET: secret, PORT: String(port) },
  });
  receiver.stdout?.on("data", (chunk) => (output += chunk));
  receiver.stderr?.on("data", (chunk) => (output += chunk));
  await waitForOutput(/"listening"/);
  const submitted = await request(app.url, "POST", "/api/process", {
    key: account.key,
    body: { image: base64(await productPhoto()), prompt: "make it sepia", webhook_url: receiverUrl },
  });
  expect(submitted.status).toBe(200);
});

afterAll(async () => {
  receiver?.kill();
  await app?.close();
});

it("accepts Retouch's signed callback", async () => {
  const line = JSON.parse(await waitForOutput(/"accepted"/));
  expect(line).toMatchObject({ status: "done", result_url: expect.stringContaining("/files/results/") });
});

it("rejects a tampered body, a wrong secret and a stale timestamp (401), and dedupes on job_id", async () => {
  const accepted = JSON.parse(await waitForOutput(/"accepted"/));
  const body = JSON.stringify({ job_id: accepted.job_id, status: "done" });
  const now = Date.now();
  const tampered = await post(body.replace("done", "error"), now, sign(now, body));
  expect(tampered.status).toBe(401);
  expect(await tampered.json()).toEqual({ error: "signature mismatch" });
  const wrongSecret = await post(
    body,
    now,
    `sha256=${createHmac("sha256", "not-the-secret").update(`${now}.${body}`).digest("hex")}`,
  );
  expect(wrongSecret.status).toBe(401);
  const stale = await post(body, now - 10 * 60_000);
  expect(stale.status).toBe(401);
  expect(await stale.json()).toEqual({ error: "stale timestamp" });
  const duplicate = await post(body, now);
  expect(duplicate.status).toBe(200);
  expect(await duplicate.json()).toEqual({ ok: true, duplicate: true });
});
