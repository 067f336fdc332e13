import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, expect, it } from "vitest";
import { signUp } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { parseMail, type ReceivedMail, readOutbox } from "../../../test/support/outbox";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

let smtp: SMTPServer;
let app: TestApp;
const received: Array<ReceivedMail & { envelopeTo: string[] }> = [];

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", async () => {
        const mail = await parseMail(Buffer.concat(chunks));
        received.push({ ...mail, envelopeTo: session.envelope.rcptTo.map((rcpt) => rcpt.address) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const { port } = smtp.server.address() as AddressInfo;
  app = await startTestApp({ SMTP_URL: `smtp://127.0.0.1:${port}`, RETOUCH_MAIL_FROM: "Retouch <noreply@retouch.test>" });
});

afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

it("delivers the verification link over SMTP, and the link verifies the account", async () => {
  const account = await signUp(app.url);
  const mail = received.find((candidate) => candidate.envelopeTo.includes(account.email));
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
