import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { simpleParser } from "mailparser";

export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
  /** The first http(s) link in the text part. */
  link: string | undefined;
}

export async function parseMail(raw: Buffer | string): Promise<ReceivedMail> {
  const mail = await simpleParser(raw);
  const to = Array.isArray(mail.to) ? mail.to[0]?.text : mail.to?.text;
  const text = mail.text ?? "";
  return { to: to ?? "", subject: mail.subject ?? "", text, link: /https?:\/\/\S+/.exec(text)?.[0] };
}

/** Mails written to the outbox directory (no SMTP configured), oldest first. */
export async function readOutbox(dir: string): Promise<ReceivedMail[]> {
  const files = (await readdir(dir).catch(() => [] as string[])).filter((file) => file.endsWith(".eml")).sort();
  return Promise.all(files.map(async (file) => parseMail(await readFile(path.join(dir, file)))));
}

export async function verificationLinkFor(outboxDir: string, email: string): Promise<string> {
  const mail = (await readOutbox(outboxDir)).reverse().find((candidate) => candidate.to.includes(email));
  if (!mail?.link) throw new Error(`no verification mail for ${email} in ${outboxDir}`);
  return mail.link;
}
