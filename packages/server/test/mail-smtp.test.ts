import { afterAll, beforeAll, expect, it } from "vitest";
import { signUp } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { readOutbox } from "../../../test/support/outbox";
import { type SmtpReceiver, startSmtpReceiver } from "../../../test/support/smtp-receiver";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

let smtp: SmtpReceiver;
let app: TestApp;

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  app = await startTestApp(smtp.env);
});

afterAll(async () => {
  await app.close();
  await smtp.close();
});

it("delivers the verification link over SMTP, and the link verifies the account", async () => {
  const account = await signUp(app.url);
  const mail = smtp.received.find((candidate) => candidate.envelopeTo.includes(account.email));
  expect(mail).toBeDefined();
  expect(mail?.subject).toBe("Verify your email for Retouch");
  expect(mail?.text).toContain("Open this link to verify your email address");
  expect(mail?.link).toMatch(/\/auth\/verify-email\?token=/);
  expect(await readOutbox(app.outboxDir)).toEqual([]);

  const link = new URL(mail?.link as string);
  const page = await fetch(`${app.url}${link.pathname}${link.search}`);
  expect(page.status).toBe(200);
  const created = await request(app.url, "POST", "/api/keys", { cookie: account.cookie, body: { name: "after smtp" } });
  expect(created.status).toBe(201);
});
