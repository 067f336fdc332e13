import { readFile } from "node:fs/promises";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUp, signUpVerified, type TestAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { rawUpload } from "../../../test/support/raw-upload";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Click-to-select over real HTTP (tRPC, the dashboard's session): a real
 * photo encoded once, clicks answered from the cached embedding, the
 * refusals, and what keeps it free work for the account only.
 */

const fixtures = new URL("../../engine/test/fixtures/", import.meta.url);
const face = { x: 224, y: 90, include: true };
const helmet = { x: 416, y: 432, include: true };

let app: TestApp;
let astronaut: Buffer;

beforeAll(async () => {
  // An API-only process: the selection has its own engine pool there (no edit threads).
  app = await startTestApp({ RETOUCH_SELECTION_START_RATE_LIMIT: "3/1m" }, { role: "api" });
  astronaut = await readFile(new URL("astronaut.jpg", fixtures));
});
afterAll(() => app?.close());

function call(path: string, account: Pick<TestAccount, "cookie"> | undefined, body: unknown, key?: string) {
  return request(app.url, "POST", `/trpc/selection.${path}`, {
    ...(account ? { cookie: account.cookie } : {}),
    ...(key ? { key } : {}),
    body,
  });
}

async function start(account: TestAccount, image: Buffer = astronaut): Promise<string> {
  const response = await call("start", account, { image: image.toString("base64") });
  expect(response.status, response.text).toBe(200);
  return response.body.result.data.selection_id;
}

/** IoU with the reference matte of the mask as a job would use it: resized to the picture, halved at 128. */
async function iouWithMatte(maskBase64: string, name: string): Promise<number> {
  const matte = await sharp(await readFile(new URL(`mattes/${name}.png`, fixtures)))
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const mask = await sharp(Buffer.from(maskBase64, "base64"))
    .greyscale()
    .resize(matte.info.width, matte.info.height, { fit: "fill", kernel: "linear" })
    .raw()
    .toBuffer();
  let both = 0;
  let either = 0;
  for (let i = 0; i < matte.data.length; i++) {
    const a = (mask[i] ?? 0) >= 128;
    const b = (matte.data[i] ?? 0) >= 128;
    if (a && b) both++;
    if (a || b) either++;
  }
  return both / Math.max(1, either);
}

describe("selecting by clicking: happy path", () => {
  let account: TestAccount;
  let selection: string;

  beforeAll(async () => {
    account = await signUp(app.url);
    selection = await start(account);
  }, 60_000);

  it("says it is available, and encodes a real photo once into a sel_ id with the picture's size", async () => {
    const status = await request(app.url, "GET", "/trpc/selection.status", { cookie: account.cookie });
    expect(status.body.result.data).toEqual({ available: true, reason: null });
    expect(selection).toMatch(/^sel_[0-9a-z]{26}$/);
  });

  it("gives the astronaut from a click on her face, and her helmet too with a click on it, free of charge", async () => {
    const before = (await app.services.profiles.get(account.userId)).credits;
    const one = await call("refine", account, { selection_id: selection, points: [face] });
    expect(one.status, one.text).toBe(200);
    // Measured: 0.74 (the matte holds the helmet she carries, which one click on her face leaves out).
    expect(await iouWithMatte(one.body.result.data.mask, "astronaut")).toBeGreaterThan(0.65);
    const two = await call("refine", account, { selection_id: selection, points: [face, helmet] });
    expect(two.status, two.text).toBe(200);
    const selected = two.body.result.data;
    // Measured: 0.95.
    expect(await iouWithMatte(selected.mask, "astronaut")).toBeGreaterThan(0.9);
    expect(selected.predicted_iou).toBeGreaterThan(0.8);
    expect([selected.mask_width, selected.mask_height]).toEqual([1024, 1024]);
    // No credit for the encode or the clicks, and no job.
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before);
  });

  it("shrinks when the helmet is clicked as not part of the object", async () => {
    const kept = await call("refine", account, { selection_id: selection, points: [face, helmet] });
    const left = await call("refine", account, { selection_id: selection, points: [face, { ...helmet, include: false }] });
    expect(left.status, left.text).toBe(200);
    // Measured: 53% of the picture with the helmet, 41% without.
    expect(left.body.result.data.coverage).toBeLessThan(kept.body.result.data.coverage - 0.08);
  });
});

describe("selecting by clicking: the client's mistakes are 4xx with a message to act on", () => {
  let account: TestAccount;
  let selection: string;

  beforeAll(async () => {
    account = await signUp(app.url);
    selection = await start(account);
  }, 60_000);

  it("refuses bytes that are not a picture, as a submission's image is refused", async () => {
    const response = await call("start", account, { image: Buffer.from("just some text, not a picture").toString("base64") });
    expect(response.status).toBe(400);
    expect(response.body.error.data.code).toBe("invalid_request");
    expect(response.body.error.message).toMatch(/^image: .*JPEG, PNG or WebP/);
  });

  it("refuses a point outside the picture, too many points, and points that leave everything out", async () => {
    const outside = await call("refine", account, { selection_id: selection, points: [{ x: 700, y: 20, include: true }] });
    expect(outside.status).toBe(400);
    expect(outside.body.error.message).toContain("outside the picture, which is 512 x 512 pixels");
    const many = await call("refine", account, { selection_id: selection, points: Array.from({ length: 25 }, () => face) });
    expect(many.status).toBe(400);
    expect(many.body.error.data.code).toBe("invalid_request");
    expect(many.text).toContain("at most 24 points");
    const none = await call("refine", account, { selection_id: selection, points: [{ ...face, include: false }] });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toContain("Click on the object at least once");
  });

  it("answers an unknown or expired selection 404, saying to choose the picture again", async () => {
    const response = await call("refine", account, { selection_id: "sel_00000000000000000000000000", points: [face] });
    expect(response.status).toBe(404);
    expect(response.body.error.data.code).toBe("not_found");
    expect(response.body.error.message).toContain("choose the picture again");
  });

  it("logs the client's mistakes as warnings, never as errors", () => {
    const lines = app.logs.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(lines.some((line) => line.msg === "selection refused" && line.level === 40)).toBe(true);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
  });
});

describe("selecting by clicking: security", () => {
  it("keeps a selection to its own account: another account's id is unknown to it", async () => {
    const owner = await signUp(app.url);
    const other = await signUp(app.url);
    const selection = await start(owner);
    const response = await call("refine", other, { selection_id: selection, points: [face] });
    expect(response.status).toBe(404);
    expect(response.body.error.data.code).toBe("not_found");
    // The owner still has it.
    expect((await call("refine", owner, { selection_id: selection, points: [face] })).status).toBe(200);
  }, 60_000);

  it("refuses a caller without a session (401), and an API key: the free preview is the dashboard's", async () => {
    const anonymous = await call("start", undefined, { image: astronaut.toString("base64") });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.data.code).toBe("unauthorized");
    const { key } = await createKey(app.url, await signUpVerified(app));
    const keyed = await call("start", undefined, { image: astronaut.toString("base64") }, key);
    expect(keyed.status).toBe(401);
    expect(keyed.body.error.message).toContain("not with an API key");
  });

  it("rate limits the pictures encoded per account: 429 rate_limited with Retry-After", async () => {
    const account = await signUp(app.url);
    const notAPicture = { image: Buffer.from("not a picture").toString("base64") };
    // Each try counts, refused or not (RETOUCH_SELECTION_START_RATE_LIMIT=3/1m here).
    for (let i = 0; i < 3; i++) expect((await call("start", account, notAPicture)).status).toBe(400);
    const limited = await call("start", account, notAPicture);
    expect(limited.status).toBe(429);
    expect(limited.body.error.data.code).toBe("rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(limited.body.error.message).toContain("3 pictures per 60 s");
    // Another account is not held back.
    expect((await call("start", await signUp(app.url), notAPicture)).status).toBe(400);
  });

  it("takes a picture's body past the 1 MiB of other calls, and refuses one over the request limit at the edge, unread: 413", async () => {
    const account = await signUp(app.url);
    // 2 MiB of base64 reaches the service (which finds no picture in it), as a photo of that size would.
    const large = await call("start", account, { image: "A".repeat(2 * 1024 * 1024) });
    expect(large.status, large.text).toBe(400);
    expect(large.body.error.message).toMatch(/^image: /);
    const answer = await rawUpload(app.url, {
      path: "/trpc/selection.start",
      headers: { cookie: account.cookie },
      declared: app.config.maxRequestBytes + 1,
      send: 0,
    });
    expect(answer.status).toBe(413);
    expect(answer.sent).toBe(0);
  });
});

describe("selecting by clicking with the segmenter switched off", () => {
  let off: TestApp;
  beforeAll(async () => {
    off = await startTestApp({ RETOUCH_OBJECT_SEGMENTER: "none" }, { role: "api" });
  });
  afterAll(() => off?.close());

  it("says so: unavailable with the reason, and a start refused 400 with it", async () => {
    const account = await signUp(off.url);
    const status = await request(off.url, "GET", "/trpc/selection.status", { cookie: account.cookie });
    expect(status.body.result.data.available).toBe(false);
    expect(status.body.result.data.reason).toContain("RETOUCH_OBJECT_SEGMENTER=none");
    const response = await request(off.url, "POST", "/trpc/selection.start", {
      cookie: account.cookie,
      body: { image: astronaut.toString("base64") },
    });
    expect(response.status).toBe(400);
    expect(response.body.error.data.code).toBe("unsupported_instruction");
    expect(response.body.error.message).toContain("Paint the mask instead");
  });
});
