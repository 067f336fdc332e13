import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";

/**
 * Operators' endpoints: /healthz, /readyz (database and blob store) and
 * /metrics (Prometheus, behind RETOUCH_METRICS_TOKEN) on every role that
 * listens, a worker included when PORT is set. Real HTTP on loopback, a real
 * database made unreachable for one app, a real webhook receiver.
 */
const TOKEN = `metrics-${randomBytes(16).toString("hex")}`;

let app: TestApp;
let receiver: WebhookReceiver;
let account: KeyedAccount;
let photo: string;

beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  app = await startTestApp({
    RETOUCH_METRICS_TOKEN: TOKEN,
    RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
    RETOUCH_WEBHOOK_RETRY_DELAYS: "1s",
    RETOUCH_WEBHOOK_TIMEOUT: "1s",
    RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
  });
  account = await keyedAccount(app, { plan: "pro", credits: 50 });
  photo = base64(await productPhoto());
});
afterAll(async () => {
  await app?.close();
  await receiver?.stop();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict reading of the text exposition format 0.0.4: every line is empty
 * (the format ignores those), a HELP, a TYPE or a sample of a declared metric (its name, or a histogram's
 * _bucket/_sum/_count), label values properly quoted and escaped, values
 * numbers; anything else throws.
 */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const name = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const label = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\["\\\\n])*"`;
  const sampleLine = new RegExp(`^(${name})(?:\\{((?:${label})(?:,${label})*)?,?\\})? (\\S+)(?: -?\\d+)?$`);
  expect(text.endsWith("\n")).toBe(true);
  for (const line of text.slice(0, -1).split("\n")) {
    if (line === "" || new RegExp(`^# HELP ${name} .*$`).test(line)) continue;
    const type = new RegExp(`^# TYPE (${name}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (type) {
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    const match = sampleLine.exec(line);
    if (!match) throw new Error(`not a line of the exposition format: ${JSON.stringify(line)}`);
    const [, sampleName = "", labelText = "", valueText = ""] = match;
    const family = [sampleName, sampleName.replace(/_(bucket|sum|count)$/, "")].find((candidate) => types.has(candidate));
    if (!family) throw new Error(`sample of an undeclared metric: ${line}`);
    // Prometheus reads values with Go's ParseFloat: NaN in any case (prom-client writes "Nan"), +Inf, -Inf.
    const value = /^nan$/i.test(valueText) ? Number.NaN : Number(valueText.replace(/^([+-])Inf$/, "$1Infinity"));
    if (Number.isNaN(value) && !/^nan$/i.test(valueText)) throw new Error(`not a number: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1] as string] = (pair[2] as string).replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    samples.push({ name: sampleName, labels, value });
  }
  return { types, samples };
}

async function scrape(target: TestApp = app): Promise<ReturnType<typeof parseExposition>> {
  const response = await request(target.url, "GET", "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status, response.text).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(response.text);
}

/** The value of one sample (labels matched exactly); 0 when the series does not exist yet. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string>): number {
  const found = samples.find(
    (sample) =>
      sample.name === name &&
      Object.keys(sample.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  return found?.value ?? 0;
}

async function submit(target: TestApp, key: string, body: Record<string, unknown>): Promise<string> {
  const response = await request(target.url, "POST", "/api/process", { key, body: { image: photo, ...body } });
  expect(response.status, response.text).toBe(200);
  return response.body.job_id as string;
}

describe("/metrics", () => {
  it("is the Prometheus text format and names every metric the operators' view needs", async () => {
    const { types } = await scrape();
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith("retouch_")))).toEqual({
      retouch_http_request_duration_seconds: "histogram",
      retouch_job_duration_seconds: "histogram",
      retouch_job_stage_seconds: "histogram",
      retouch_webhook_attempts_total: "counter",
      retouch_model_load_seconds: "histogram",
      retouch_model_session_load_seconds: "histogram",
      retouch_queue_jobs: "gauge",
      retouch_queue_oldest_pending_age_seconds: "gauge",
      retouch_body_bytes_in_flight: "gauge",
      retouch_body_bytes_allowance: "gauge",
    });
    // The process's own figures, under their standard names.
    expect(types.get("process_resident_memory_bytes")).toBe("gauge");
    expect(types.get("nodejs_eventloop_lag_seconds")).toBe("gauge");
  });

  it("counts a processed job by workflow and outcome, and webhook attempts by outcome", async () => {
    const before = (await scrape()).samples;
    receiver.script("/flaky", [500, 200]);
    const jobId = await submit(app, account.key, { prompt: "make it sepia", webhook_url: `${receiver.url}/flaky` });
    expect((await waitForJob(app.url, account.key, jobId)).status).toBe("done");
    await receiver.waitFor("/flaky", 2);
    const workflow = (await app.services.stores.jobs.find(jobId))?.workflow as string;
    // The second attempt is counted just after its answer: look until it shows.
    let after = (await scrape()).samples;
    await vi.waitFor(
      async () => {
        after = (await scrape()).samples;
        const delivered = (samples: typeof after) =>
          sampleValue(samples, "retouch_webhook_attempts_total", { outcome: "delivered" });
        expect(delivered(after) - delivered(before)).toBeGreaterThanOrEqual(1);
      },
      { timeout: 5_000, interval: 20 },
    );
    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta("retouch_job_duration_seconds_count", { workflow, outcome: "done" })).toBe(1);
    expect(sampleValue(after, "retouch_job_duration_seconds_sum", { workflow, outcome: "done" })).toBeGreaterThan(0);
    // Its edit, stage by stage: a sepia tone is decoded, edited and encoded; nothing is detected or masked.
    for (const stage of ["decode", "edit", "encode"]) {
      expect(delta("retouch_job_stage_seconds_count", { workflow, stage }), stage).toBe(1);
    }
    for (const stage of ["detect", "mask"]) expect(delta("retouch_job_stage_seconds_count", { workflow, stage }), stage).toBe(0);
    expect(delta("retouch_webhook_attempts_total", { outcome: "retry" })).toBe(1);
    expect(delta("retouch_webhook_attempts_total", { outcome: "delivered" })).toBe(1);
    // The submission's request, by its route pattern.
    expect(delta("retouch_http_request_duration_seconds_count", { method: "POST", route: "/api/process", status: "200" })).toBe(
      1,
    );
    // Nothing pending any more; the allowances are this process's settings.
    expect(sampleValue(after, "retouch_queue_jobs", { state: "waiting" })).toBe(0);
    expect(sampleValue(after, "retouch_queue_oldest_pending_age_seconds", {})).toBe(0);
    expect(sampleValue(after, "retouch_body_bytes_allowance", { pool: "authenticated" })).toBe(app.config.maxBodyBytesInFlight);
    expect(sampleValue(after, "retouch_body_bytes_allowance", { pool: "public" })).toBe(app.config.publicBodyBytesInFlight);
    expect(sampleValue(after, "retouch_body_bytes_in_flight", { pool: "authenticated" })).toBe(0);
  });

  it("labels requests by route pattern: 1,000 random paths add no more than a few series", async () => {
    const routesOf = (samples: Sample[]) =>
      new Set(
        samples.filter((sample) => sample.name === "retouch_http_request_duration_seconds_count").map((s) => s.labels.route),
      );
    const before = (await scrape()).samples;
    const seriesBefore = before.filter((s) => s.name === "retouch_http_request_duration_seconds_count").length;
    const prefixes = ["/", "/api/keys/", "/api/process/", "/trpc/", "/files/", "/.well-known/", "/oauth2/", "/assets/", "/x/y/"];
    const random = Array.from({ length: 1000 }, (_, i) => `${prefixes[i % prefixes.length]}${randomBytes(6).toString("hex")}`);
    const methods = ["GET", "POST", "DELETE", "PUT"];
    for (let i = 0; i < random.length; i += 25) {
      await Promise.all(
        random
          .slice(i, i + 25)
          .map((requestPath, j) =>
            fetch(`${app.url}${requestPath}`, { method: methods[(i + j) % methods.length] }).then((response) => response.text()),
          ),
      );
    }
    const after = (await scrape()).samples;
    const added = [...routesOf(after)].filter((route) => !routesOf(before).has(route));
    // Patterns only: not one label value is a path that was asked for.
    for (const route of routesOf(after)) expect(random.some((requestPath) => route === requestPath)).toBe(false);
    for (const route of added) expect(route).toMatch(/^(\*|\/[a-zA-Z0-9/:._*-]*)$/);
    expect(added.length).toBeLessThanOrEqual(prefixes.length + 2);
    const seriesAfter = after.filter((s) => s.name === "retouch_http_request_duration_seconds_count").length;
    // method x route x status: bounded by the routes, never by the 1,000 paths.
    expect(seriesAfter - seriesBefore).toBeLessThan(60);
  });
});

describe("/metrics: who may read it", () => {
  it("refuses a scrape without the token (401 with a Bearer challenge) and shows nothing", async () => {
    const noToken: Record<string, string>[] = [{}, { authorization: "Bearer" }, { authorization: "Basic dXNlcjpwYXNz" }];
    for (const headers of noToken) {
      const response = await request(app.url, "GET", "/metrics", { headers });
      expect(response.status).toBe(401);
      expect(response.body.code).toBe("unauthorized");
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer realm="metrics"/);
      expect(response.text).not.toContain("retouch_");
    }
    // A token in the query string is not a credential.
    const inQuery = await request(app.url, "GET", `/metrics?token=${TOKEN}`);
    expect(inQuery.status).toBe(401);
    // Nor does the endpoint take a body, even with the token (413, unread).
    const withBody = await request(app.url, "POST", "/metrics", { headers: { authorization: `Bearer ${TOKEN}` }, body: {} });
    expect(withBody.status).toBe(413);
  });

  it("refuses every wrong token the same way, whatever its length or how much of it is right", async () => {
    const wrong = [
      "x",
      TOKEN.slice(0, -1),
      `${TOKEN}x`,
      `${TOKEN.slice(0, -1)}${TOKEN.endsWith("0") ? "1" : "0"}`,
      TOKEN.toUpperCase(),
      "a".repeat(4096),
    ];
    const answers = await Promise.all(
      wrong.map((token) => request(app.url, "GET", "/metrics", { headers: { authorization: `Bearer ${token}` } })),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="metrics", error="invalid_token"');
      expect(answer.text).toBe(answers[0]?.text);
      expect(answer.text).not.toContain("retouch_");
    }
  });
});

describe("/readyz and /healthz", () => {
  it("say ready when the database and the blob store answer", async () => {
    const ready = await request(app.url, "GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ok: true, checks: { database: "ok", store: "ok" } });
    expect(ready.headers.get("cache-control")).toBe("no-store");
    expect((await request(app.url, "GET", "/healthz")).status).toBe(200);
  });

  it("answer 503 with Retry-After while the blob store's directory cannot be written, and ready again once it can", async () => {
    const blobDir = path.join(app.config.dataDir, "blobs");
    await rm(blobDir, { recursive: true, force: true });
    // A file where the directory should be: refused even to root, who ignores permissions.
    await writeFile(blobDir, "not a directory");
    try {
      const refused = await request(app.url, "GET", "/readyz");
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("5");
      expect(refused.body).toMatchObject({ code: "service_unavailable", checks: { database: "ok", store: "unreachable" } });
      // The reason goes to the operator's log, not to whoever asked.
      expect(refused.text).not.toMatch(/EEXIST|ENOTDIR|retouch-test-/);
      expect(app.logs.some((line) => line.includes('"check":"store"') && line.includes("readiness: not ready"))).toBe(true);
      // Alive all the same: an orchestrator must not restart a process for its store.
      expect((await request(app.url, "GET", "/healthz")).status).toBe(200);
    } finally {
      await rm(blobDir, { force: true });
      await mkdir(blobDir, { recursive: true });
    }
    expect((await request(app.url, "GET", "/readyz")).status).toBe(200);
  });
});

describe("an API process whose database goes away", () => {
  let api: TestApp;
  let admin: pg.Client;
  let databaseName: string;

  beforeAll(async () => {
    api = await startTestApp({ RETOUCH_METRICS_TOKEN: TOKEN }, { role: "api" });
    const url = new URL(api.config.databaseUrl as string);
    databaseName = url.pathname.slice(1);
    url.pathname = "/postgres";
    admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.query(`alter database ${databaseName} allow_connections true`).catch(() => {});
    await admin?.end();
    await api?.close();
  });

  it("shows the jobs waiting for a worker and the age of the oldest", async () => {
    const owner = await keyedAccount(api, { plan: "pro", credits: 10 });
    await submit(api, owner.key, { prompt: "make it sepia" });
    await submit(api, owner.key, { prompt: "make it sepia" });
    // The oldest must be a second old before the gauge can show it: scrape until it does (the point is the age).
    const samples = await vi.waitFor(
      async () => {
        const { samples } = await scrape(api);
        expect(sampleValue(samples, "retouch_queue_oldest_pending_age_seconds", {})).toBeGreaterThanOrEqual(1);
        return samples;
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(sampleValue(samples, "retouch_queue_jobs", { state: "waiting" })).toBe(2);
    expect(sampleValue(samples, "retouch_queue_jobs", { state: "running" })).toBe(0);
    expect(sampleValue(samples, "retouch_queue_oldest_pending_age_seconds", {})).toBeGreaterThanOrEqual(1);
  });

  it("answers /readyz 503 while no connection to it can be made, /healthz 200, and is ready again after", async () => {
    // Nobody may connect (superusers included), and the connections open now are cut.
    await admin.query(`alter database ${databaseName} allow_connections false`);
    await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1", [databaseName]);
    try {
      const refused = await request(api.url, "GET", "/readyz");
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("5");
      expect(refused.body).toMatchObject({
        code: "service_unavailable",
        message: "Not ready: the database cannot be reached.",
        checks: { database: "unreachable", store: "ok" },
      });
      expect(refused.text).not.toContain(databaseName);
      expect((await request(api.url, "GET", "/healthz")).status).toBe(200);
      // The scrape still answers, without queue figures it cannot read rather than stale ones.
      const { samples } = await scrape(api);
      expect(samples.some((sample) => sample.name === "retouch_queue_jobs")).toBe(false);
      expect(samples.some((sample) => sample.name === "process_resident_memory_bytes")).toBe(true);
    } finally {
      await admin.query(`alter database ${databaseName} allow_connections true`);
    }
    expect((await request(api.url, "GET", "/readyz")).status).toBe(200);
  });
});

describe("a worker process", () => {
  it("with PORT set listens there for /healthz, /readyz and /metrics only", async () => {
    const worker = await startTestApp({}, { role: "worker" });
    try {
      expect((await request(worker.url, "GET", "/healthz")).status).toBe(200);
      expect((await request(worker.url, "GET", "/readyz")).body).toEqual({ ok: true, checks: { database: "ok", store: "ok" } });
      // No token set: the metrics are not exposed at all, as on a path never mounted.
      const metrics = await request(worker.url, "GET", "/metrics");
      expect(metrics.status).toBe(404);
      expect(metrics.body).toEqual({ code: "not_found", message: "No route for GET /metrics." });
      // Nothing of the service: not its API, documents, dashboard or MCP endpoint, and no credentials asked for.
      for (const [method, requestPath] of [
        ["GET", "/api/capabilities"],
        ["GET", "/api/keys"],
        ["GET", "/openapi.json"],
        ["GET", "/"],
        ["GET", "/trpc/account.get"],
        ["POST", "/mcp"],
        ["GET", "/.well-known/oauth-authorization-server"],
      ] as const) {
        const response = await request(worker.url, method, requestPath, { key: "pk_wrong" });
        expect(response.status, `${method} ${requestPath}`).toBe(404);
      }
    } finally {
      await worker.close();
    }
  });
});
