import { escapeHtml } from "./escape-html";
import type { MailMessage } from "./mailer";

export function verificationEmail(to: { email: string; name: string }, link: string): MailMessage {
  const greeting = to.name ? `Hi ${to.name},` : "Hi,";
  return {
    to: to.email,
    subject: "Verify your email for Retouch",
    text: [
      greeting,
      "",
      "Open this link to verify your email address. Until you do, you cannot create API keys or submit edits.",
      "",
      link,
      "",
      "If you did not sign up for Retouch, ignore this message.",
    ].join("\n"),
    html: `<p>${escapeHtml(greeting)}</p>
<p>Open this link to verify your email address. Until you do, you cannot create API keys or submit edits.</p>
<p><a href="${escapeHtml(link)}">Verify my email</a></p>
<p style="color:#666">Or paste this address into your browser: ${escapeHtml(link)}</p>
<p style="color:#666">If you did not sign up for Retouch, ignore this message.</p>`,
  };
}
