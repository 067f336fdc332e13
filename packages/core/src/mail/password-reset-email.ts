import { escapeHtml } from "./escape-html";
import type { MailMessage } from "./mailer";

export function passwordResetEmail(to: { email: string; name: string }, link: string, validMinutes: number): MailMessage {
  const greeting = to.name ? `Hi ${to.name},` : "Hi,";
  const intro = `Someone asked to reset the password of your Retouch account. Open this link within ${validMinutes} minutes to choose a new one; it works once.`;
  const ignore = "If it was not you, ignore this message: your password stays as it is.";
  return {
    to: to.email,
    subject: "Reset your Retouch password",
    text: [greeting, "", intro, "", link, "", ignore].join("\n"),
    html: `<p>${escapeHtml(greeting)}</p>
<p>${escapeHtml(intro)}</p>
<p><a href="${escapeHtml(link)}">Choose a new password</a></p>
<p style="color:#666">Or paste this address into your browser: ${escapeHtml(link)}</p>
<p style="color:#666">${escapeHtml(ignore)}</p>`,
  };
}
