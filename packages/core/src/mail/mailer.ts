import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import nodemailer, { type Transporter } from "nodemailer";
import type { Logger } from "../lib/logger";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  /** "smtp" delivers; "outbox" writes .eml files for a developer to open. */
  readonly kind: "smtp" | "outbox";
  send(message: MailMessage): Promise<{ location: string }>;
  close(): void;
}

export function createMailer(options: { smtpUrl?: string; from: string; outboxDir: string; logger: Logger }): Mailer {
  return options.smtpUrl
    ? new SmtpMailer(nodemailer.createTransport(options.smtpUrl), options.from)
    : new OutboxMailer(options.outboxDir, options.from, options.logger);
}

class SmtpMailer implements Mailer {
  readonly kind = "smtp";
  constructor(
    private readonly transport: Transporter,
    private readonly from: string,
  ) {}

  async send(message: MailMessage): Promise<{ location: string }> {
    const info = await this.transport.sendMail({ from: this.from, ...message });
    return { location: String(info.messageId) };
  }

  close(): void {
    this.transport.close();
  }
}

/** Without SMTP, each message becomes an RFC 822 `.eml` file that any mail client opens. */
class OutboxMailer implements Mailer {
  readonly kind = "outbox";
  private readonly transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });

  constructor(
    private readonly dir: string,
    private readonly from: string,
    private readonly logger: Logger,
  ) {}

  async send(message: MailMessage): Promise<{ location: string }> {
    const info = await this.transport.sendMail({ from: this.from, ...message });
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const safeRecipient = message.to.replace(/[^a-zA-Z0-9@._-]/g, "_");
    const file = path.join(this.dir, `${new Date().toISOString().replace(/[:.]/g, "-")}-${safeRecipient}.eml`);
    await writeFile(file, info.message as Buffer, { mode: 0o600 });
    this.logger.debug({ file }, "email written to the outbox");
    return { location: file };
  }

  close(): void {
    this.transport.close();
  }
}
