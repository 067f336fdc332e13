import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { newId } from "@retouch/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { signUpVerified, type TestAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { jobCount } from "../../../test/support/jobs";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * What the dashboard calls with the signed-in session and no API key (issue
 * 25): the playground's submission, status and result over tRPC, behind the
 * same-origin check that protects every cookie mutation; the usage chart's
 * images per day by workflow; the jobs listing's filters.
 */

const rootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const PHOTO = path.join(rootDir, "packages/engine/test/fixtures/coffee.jpg");
const EVIL_ORIGIN = "https://evil.example";

let app: TestApp;
let account: TestAccount;
let photo: string;

const trpcQuery = (procedure: string, input?: unknown, cookie = account.cookie) =>
  request(
    app.url,
    "GET",
    `/trpc/${procedure}${input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(input))}`}`,
    { cookie },
  );

const submitFrom = (origin: string, body: unknown, cookie = account.cookie) =>
  request(app.url, "POST", "/trpc/playground.submit", { cookie, headers: { origin }, body });

async function credits(): Promise<number> {
  return (await request(app.url, "GET", "/api/account", { cookie: account.cookie })).body.credits_remaining;
}

/** Jobs written straight to the database, done or failed, on the given days: what the chart and the filters read. */
async function insertSettledJobs(
  userId: string,
  jobs: Array<{ day: string; workflow: string; status: "done" | "error"; prompt: string }>,
): Promise<string[]> {
  const client = new pg.Client({ connectionString: app.config.databaseUrl as string });
  await client.connect();
  const ids: string[] = [];
  try {
    for (const job of jobs) {
      const id = newId("job");
      ids.push(id);
      await client.query(
        `insert into jobs (id, user_id, status, workflow, prompt, output_format, input_width, input_height, credits_used, created_at)
         values ($1, $2, $3, $4, $5, 'jpeg', 320, 240, $6, ($7::date + time '12:00') at time zone 'UTC')`,
        [id, userId, job.status, job.workflow, job.prompt, job.status === "done" ? 1 : 0, job.day],
      );
    }
  } finally {
    await client.end();
  }
  return ids;
}

const dayBefore = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  account = await signUpVerified(app);
  photo = (await readFile(PHOTO)).toString("base64");
}, 60_000);

afterAll(async () => {
  await app?.close();
});

describe("the playground on the signed-in session", { timeout: 60_000 }, () => {
  it("submits, follows and fetches an edit with the cookie alone, and no API key is created", async () => {
    const submitted = await submitFrom(app.url, { image: photo, prompt: "make it black and white" });
    expect(submitted.status, submitted.text).toBe(200);
    const { job_id: jobId, credits_remaining: remaining } = submitted.body.result.data;
    expect(jobId).toMatch(/^job_/);
    expect(remaining).toBe(9);

    const followed = await vi.waitFor(
      async () => {
        const polled = await trpcQuery("playground.job", { job_id: jobId });
        // A refusal is no reason to ask again: it fails the test at once.
        if (polled.status !== 200) return polled;
        if (polled.body.result.data.status === "pending") throw new Error(`${jobId} still pending`);
        return polled;
      },
      { timeout: 45_000, interval: 50 },
    );
    expect(followed.status, followed.text).toBe(200);
    expect(followed.body.result.data.status).toBe("done");
    const result = await trpcQuery("playground.result", { job_id: jobId });
    expect(result.status, result.text).toBe(200);
    const download = await fetch(result.body.result.data.url);
    expect(download.status).toBe(200);

    const keys = await request(app.url, "GET", "/api/keys", { cookie: account.cookie });
    expect(keys.body.keys).toEqual([]);
  });

  it("answers a prompt the server cannot carry out with 400 unsupported_instruction and charges nothing", async () => {
    const before = await credits();
    const refused = await submitFrom(app.url, { image: photo, prompt: "compose a sonnet about this photo" });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.error.data).toMatchObject({ code: "unsupported_instruction", httpStatus: 400 });
    expect(await credits()).toBe(before);
  });

  it("refuses another account's job: its status is not found", async () => {
    const other = await signUpVerified(app);
    const submitted = await submitFrom(app.url, { image: photo, prompt: "make it sepia" });
    const polled = await trpcQuery("playground.job", { job_id: submitted.body.result.data.job_id }, other.cookie);
    expect(polled.status).toBe(404);
    expect(polled.body.error.data.code).toBe("not_found");
  });
});

describe("the webhook signing secret on the signed-in session", { timeout: 30_000 }, () => {
  it("reads the account's secret with the cookie alone, the same one an API key reads", async () => {
    const owner = await signUpVerified(app);
    const read = await trpcQuery("webhooks.sessionSecret", undefined, owner.cookie);
    expect(read.status, read.text).toBe(200);
    const { secret, standard_webhooks_secret } = read.body.result.data;
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(standard_webhooks_secret).toBe(`whsec_${Buffer.from(secret, "hex").toString("base64")}`);
    // Another account reads its own.
    const other = await trpcQuery("webhooks.sessionSecret", undefined, account.cookie);
    expect(other.body.result.data.secret).not.toBe(secret);
    // A key made afterwards (outside the dashboard) reads the same secret over REST.
    const made = await request(app.url, "POST", "/api/keys", {
      cookie: owner.cookie,
      headers: { origin: app.url },
      body: { name: "script" },
    });
    expect(made.status, made.text).toBe(201);
    const byKey = await request(app.url, "GET", "/api/webhooks/secret", { key: made.body.key });
    expect(byKey.body.secret).toBe(secret);
  });

  it("refuses a request without a session, and REST's operation stays bearer-only", async () => {
    const anonymous = await request(app.url, "GET", "/trpc/webhooks.sessionSecret");
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.data.code).toBe("unauthorized");
    const restWithCookie = await request(app.url, "GET", "/api/webhooks/secret", { cookie: account.cookie });
    expect(restWithCookie.status).toBe(401);
  });
});

describe("the playground's submission from another site (CSRF)", { timeout: 30_000 }, () => {
  it.each([
    ["a foreign Origin", { origin: EVIL_ORIGIN }],
    ["Origin: null (a sandboxed frame)", { origin: "null" }],
    ["another site (Sec-Fetch-Site: cross-site)", { "sec-fetch-site": "cross-site" }],
  ])(
    "takes the submission from the service's own page, and refuses it from %s with 403, charging and starting nothing",
    async (_label, headers) => {
      // The same request from the dashboard's origin goes through: the refusal below is about where it comes from.
      const own = await submitFrom(app.url, { image: photo, prompt: "make it black and white" });
      expect(own.status, own.text).toBe(200);
      const before = { credits: await credits(), jobs: await jobCount(app.config.databaseUrl as string, account.userId) };
      const response = await request(app.url, "POST", "/trpc/playground.submit", {
        cookie: account.cookie,
        headers,
        body: { image: photo, prompt: "make it black and white" },
      });
      expect(response.status).toBe(403);
      expect(response.body.error.data).toMatchObject({ code: "cross_site_request", httpStatus: 403 });
      expect(await credits()).toBe(before.credits);
      expect(await jobCount(app.config.databaseUrl as string, account.userId)).toBe(before.jobs);
    },
  );

  it("refuses a cross-site HTML form post (what a foreign page can make a browser send) with 403", async () => {
    const before = await credits();
    const response = await request(app.url, "POST", "/trpc/playground.submit", {
      cookie: account.cookie,
      headers: { origin: EVIL_ORIGIN, "content-type": "application/x-www-form-urlencoded" },
      rawBody: `image=${encodeURIComponent(photo.slice(0, 100))}&prompt=make+it+sepia`,
    });
    expect(response.status).toBe(403);
    expect(await credits()).toBe(before);
  });

  it("keeps POST /api/process bearer-only, as the spec says: the cookie there is 401", async () => {
    const response = await request(app.url, "POST", "/api/process", {
      cookie: account.cookie,
      headers: { origin: app.url },
      body: { image: photo, prompt: "make it black and white" },
    });
    expect(response.status).toBe(401);
    expect(response.body.code).toBe("unauthorized");
  });
});

describe("usage per day and the jobs' filters", { timeout: 30_000 }, () => {
  let user: TestAccount;
  let ids: string[];

  beforeAll(async () => {
    user = await signUpVerified(app);
    ids = await insertSettledJobs(user.userId, [
      { day: dayBefore(0), workflow: "background_removal", status: "done", prompt: "remove the background" },
      { day: dayBefore(0), workflow: "background_removal", status: "done", prompt: "remove the background" },
      { day: dayBefore(0), workflow: "generative_edit", status: "error", prompt: "make it sepia" },
      { day: dayBefore(3), workflow: "object_removal", status: "done", prompt: "remove the cup" },
      { day: dayBefore(29), workflow: "generative_edit", status: "done", prompt: "make it black and white" },
      // Outside the 30 days: not in the chart, still in the listing.
      { day: dayBefore(30), workflow: "generative_edit", status: "done", prompt: "rotate it" },
    ]);
  });

  it("counts the images made per day and workflow over 30 days, every day listed", async () => {
    const response = await trpcQuery("jobs.usage", undefined, user.cookie);
    expect(response.status, response.text).toBe(200);
    const { days, workflows } = response.body.result.data;
    expect(workflows).toEqual(["background_removal", "object_removal", "generative_edit"]);
    expect(days).toHaveLength(30);
    expect(days[0].date).toBe(dayBefore(29));
    expect(days[29].date).toBe(dayBefore(0));
    const byDate = new Map(days.map((day: { date: string }) => [day.date, day]));
    expect(byDate.get(dayBefore(0))).toEqual({
      date: dayBefore(0),
      total: 2,
      by_workflow: { background_removal: 2, object_removal: 0, generative_edit: 0 },
    });
    expect(byDate.get(dayBefore(3))).toMatchObject({ total: 1, by_workflow: { object_removal: 1 } });
    expect(byDate.get(dayBefore(29))).toMatchObject({ total: 1, by_workflow: { generative_edit: 1 } });
    expect(days.reduce((sum: number, day: { total: number }) => sum + day.total, 0)).toBe(4);
  });

  it("refuses the usage without a session", async () => {
    const response = await request(app.url, "GET", "/trpc/jobs.usage");
    expect(response.status).toBe(401);
  });

  const listed = async (query: string) => {
    const response = await request(app.url, "GET", `/api/jobs?${query}`, { cookie: user.cookie });
    expect(response.status, response.text).toBe(200);
    return response.body.jobs.map((job: { prompt: string; status: string }) => `${job.status} ${job.prompt}`);
  };

  it("filters the listing by status, workflow and day on the server", async () => {
    expect(await listed("")).toHaveLength(6);
    expect(await listed("status=error")).toEqual(["error make it sepia"]);
    expect(await listed("workflow=background_removal")).toEqual(["done remove the background", "done remove the background"]);
    expect(await listed(`from=${dayBefore(3)}&to=${dayBefore(3)}`)).toEqual(["done remove the cup"]);
    expect(await listed(`status=done&workflow=generative_edit&to=${dayBefore(29)}`)).toEqual([
      "done make it black and white",
      "done rotate it",
    ]);
    expect(ids).toHaveLength(6);
  });

  it("pages a filtered listing with its cursor, never mixing in other jobs", async () => {
    const first = await request(app.url, "GET", "/api/jobs?status=done&limit=2", { cookie: user.cookie });
    expect(first.body.jobs).toHaveLength(2);
    const second = await request(
      app.url,
      "GET",
      `/api/jobs?status=done&limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`,
      { cookie: user.cookie },
    );
    const third = await request(
      app.url,
      "GET",
      `/api/jobs?status=done&limit=2&cursor=${encodeURIComponent(second.body.next_cursor)}`,
      { cookie: user.cookie },
    );
    const all = [...first.body.jobs, ...second.body.jobs, ...third.body.jobs];
    expect(all.map((job: { status: string }) => job.status)).toEqual(["done", "done", "done", "done", "done"]);
    expect(third.body.next_cursor).toBeNull();
  });

  it.each([
    ["an unknown status", "status=lost", "status"],
    ["an unknown workflow", "workflow=painting", "workflow"],
    ["a day that is not a date", "from=yesterday", "from"],
    ["a `to` before the `from`", `from=${dayBefore(0)}&to=${dayBefore(3)}`, "to"],
  ])("answers %s with 400 invalid_request naming the field", async (_label, query, field) => {
    const response = await request(app.url, "GET", `/api/jobs?${query}`, { cookie: user.cookie });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("invalid_request");
    expect(response.body.message).toContain(field);
  });
});
