import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { parseMail, type ReceivedMail } from "./outbox";

export interface SmtpReceivedMail extends ReceivedMail {
  /** The envelope's recipients (RCPT TO), which need not be the headers' To. */
  envelopeTo: string[];
}

export interface SmtpReceiver {
  /** Every mail delivered so far, in order of arrival. */
  readonly received: SmtpReceivedMail[];
  /** The settings that send the app's mail here: pass them to startTestApp. */
  readonly env: { SMTP_URL: string; RETOUCH_MAIL_FROM: string };
  close(): Promise<void>;
}

/** A real SMTP server on loopback (no TLS, no auth) that keeps what it is sent. */
export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const received: SmtpReceivedMail[] = [];
  const smtp = new SMTPServer({
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
  return {
    received,
    env: { SMTP_URL: `smtp://127.0.0.1:${port}`, RETOUCH_MAIL_FROM: "Retouch <noreply@retouch.test>" },
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}
