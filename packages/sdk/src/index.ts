export { type VerifyWebhookOptions, verifyWebhook, WebhookVerificationError } from "./webhooks";
