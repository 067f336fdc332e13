import { type Config, MAX_INLINE_IMAGE_BYTES, MAX_WAIT_SECONDS } from "@retouch/core";
import { OUTPUT_FORMATS } from "@retouch/engine";
import { MCP_PATH, MCP_SERVER_VERSION } from "../mcp/mcp.handler";
import { type McpTool, mcpToolsFromRouter } from "../mcp/mcp-tools";

/**
 * The discovery documents, written for their readers (an LLM, an agent, a
 * plugin host) and built from the running configuration, so every address in
 * them is this server's.
 */

type DiscoveryConfig = Pick<Config, "publicBaseUrl" | "mailFrom">;

const DESCRIPTION =
  "Edit images from plain-language instructions: remove the background (transparent PNG), remove or erase objects, or adjust the image (black and white, brighter, crop, rotate, resize, new background colour...). Jobs run asynchronously; 1 credit per image, refunded on failure.";

function contactEmail(config: DiscoveryConfig): string {
  return /<([^>]+)>/.exec(config.mailFrom)?.[1] ?? config.mailFrom;
}

function tools(): McpTool[] {
  return mcpToolsFromRouter();
}

export function mcpManifest(config: DiscoveryConfig) {
  return {
    name: "retouch",
    version: MCP_SERVER_VERSION,
    description: DESCRIPTION,
    transport: "streamable-http",
    endpoint: `${config.publicBaseUrl}${MCP_PATH}`,
    auth: {
      type: "bearer",
      description: `Either a Retouch API key (pk_...) in Authorization: Bearer (create one after signing up at ${config.publicBaseUrl}/auth/sign-up/email and verifying your email), or an OAuth 2.1 access token the client obtains itself: without a credential /mcp answers 401 with WWW-Authenticate pointing to ${config.publicBaseUrl}/.well-known/oauth-protected-resource/mcp; the client registers (dynamic client registration) or names itself by the https URL of its Client ID Metadata Document, the person signs in and approves it, and the token (PKCE S256, refreshable) is valid on /mcp only.`,
    },
    tools: tools().map((tool) => ({ name: tool.name, description: tool.description })),
  };
}

export function aiPluginManifest(config: DiscoveryConfig) {
  const base = config.publicBaseUrl;
  return {
    schema_version: "v1",
    name_for_human: "Retouch",
    name_for_model: "retouch",
    description_for_human:
      "Edit your images with plain-language instructions: remove backgrounds, erase objects, adjust colours.",
    description_for_model:
      "Edits an existing image from a natural-language instruction; it cannot create an image from nothing. POST /api/process with the image as base64 and a prompt returns a job_id at once (1 credit, refunded if the job fails). Poll GET /api/process/status?job_id=... every 2-5 s until status is done or error, then GET /api/process/result?job_id=... for a signed url (valid 1 hour) to download the image. Background removal always yields PNG; other edits JPEG unless format says otherwise.",
    auth: { type: "user_http", authorization_type: "bearer" },
    api: { type: "openapi", url: `${base}/openapi.json` },
    logo_url: `${base}/logo.png`,
    contact_email: contactEmail(config),
    legal_info_url: `${base}/terms`,
  };
}

export function llmsTxt(config: DiscoveryConfig): string {
  const base = config.publicBaseUrl;
  const toolList = tools()
    .map((tool) => `- \`${tool.name}\`: ${tool.description}`)
    .join("\n");
  return `# Retouch

> ${DESCRIPTION} This server is at ${base}.

Retouch edits an existing image; it cannot generate one from nothing. The prompt picks the workflow: "remove the background" (or "transparent background") gives a PNG with transparency; "remove / erase / delete / clean up X" removes objects (a \`mask\` PNG or a \`detect\` list such as "person . car" targets them); anything else is an edit such as "make it black and white", "a lot brighter", "crop to square", "rotate 90 degrees", "put it on a white background".

## Getting access (a person does this once)

1. \`POST ${base}/auth/sign-up/email\` with \`{"email", "password" (8+ characters), "name"}\`: creates the account with 10 free credits and returns a session cookie.
2. Open the verification link emailed to that address.
3. \`POST ${base}/api/keys\` with \`{"name": "..."}\` and the session cookie: returns the API key (\`pk_...\`) once.

With the key (or the cookie), \`GET ${base}/api/account\` shows the plan, its limits, the credits left and the jobs charged this month; \`GET ${base}/api/jobs\` lists past jobs, newest first (pass \`next_cursor\` back as \`cursor\` for older ones).

Where the server sells credits and plans (Stripe), \`GET ${base}/api/billing\` shows the plan, balance, allowance, renewal, the packs and plans on offer and past purchases; \`POST ${base}/api/billing/checkout\` with \`{"credits": 100}\` or \`{"plan": "starter"}\` returns \`{"url"}\`, a checkout page for the account owner to open (paying also verifies the email). Where it does not, these answer 409 \`payments_not_configured\`.

## Editing an image

1. \`POST ${base}/api/process\` with \`Authorization: Bearer pk_...\` and \`{"image": "<base64 JPEG/PNG/WebP>", "prompt": "remove the background"}\` (or \`"image_url": "https://..."\`, a public address the service fetches) → \`{"job_id", "credits_remaining"}\`. Optional: \`format\` (${OUTPUT_FORMATS.join(", ")}), \`quality\` (1-100), \`mask\`, \`detect\`, \`webhook_url\`, or \`{"images": [...]}\` for a batch. Send an \`Idempotency-Key\` header to retry safely.
2. \`GET ${base}/api/process/status?job_id=...\` every 2-5 seconds until \`status\` is \`done\` or \`error\`.
3. \`GET ${base}/api/process/result?job_id=...\` → \`{"url", "format", "width", "height", ...}\`; download \`url\` with a plain GET within the hour.

What this server can do (its built-in instructions with examples, the objects it finds without a mask, its generative provider if any): \`GET ${base}/api/capabilities\`, no key needed.

Errors are \`{"code", "message"}\`: \`email_unverified\` (verify the email first), \`insufficient_credits\` (402), \`rate_limited\` and \`too_many_in_flight\` (429, honour \`Retry-After\`), \`invalid_request\` (400, the message names the field), \`unsupported_instruction\` (400, nothing charged: the server cannot carry out the prompt; the message says what it can). A failed job's status carries \`error_code\` and \`error_message\`.

## For agents (MCP)

Streamable HTTP at \`${base}${MCP_PATH}\` with the same bearer key, or with OAuth 2.1 for clients that cannot set a header: give the client only the URL; it discovers the authorization server from the 401's \`WWW-Authenticate\` (\`${base}/.well-known/oauth-protected-resource/mcp\`), registers itself or uses its Client ID Metadata Document's URL as client_id, and the person signs in and approves it once; the token works on \`/mcp\` only. Manifest at ${base}/mcp.json. Tools:

${toolList}

\`edit_image\` takes \`image_url\` (a public https: address: no base64 to carry) or \`image\`; with \`wait_seconds\` (0 to ${MAX_WAIT_SECONDS}) it returns the finished result in the same call when the job settles in time. A finished result comes as JSON (\`structuredContent\` and text), a \`resource_link\` to the signed url, and, up to ${MAX_INLINE_IMAGE_BYTES / 1024} KiB, the picture itself as \`image\` content. Errors are tool results with \`isError\` whose text is JSON \`{"code", "message"}\` (and \`retry_after_seconds\` when rate limited).

## Docs

- [OpenAPI 3.1 description](${base}/openapi.json): every operation, field, status code and error code
- [API reference](${base}/docs): the same, to read and try in a browser
- [Agent instructions](${base}/SKILL.md): the polling and download loop, step by step
- [MCP manifest](${base}/mcp.json)
`;
}

export function skillMd(config: DiscoveryConfig): string {
  const base = config.publicBaseUrl;
  return `---
name: retouch-image-editing
description: Edit an image from a plain-language instruction with the Retouch API at ${base} (remove the background, remove objects, black and white, brighten, crop, rotate, resize...). Use when the user wants an existing image changed; it cannot create images from nothing.
---

# Editing images with Retouch

Retouch runs each edit as an asynchronous job. You submit, poll, then download. Each
image costs 1 credit; a failed job is refunded automatically.

## What you need

An API key (\`pk_...\`), sent as \`Authorization: Bearer pk_...\`. Getting one needs a
person once: sign up (\`POST ${base}/auth/sign-up/email\`), open the verification link
from the email, then create a key (\`POST ${base}/api/keys\` with the session cookie).
If a call answers \`email_unverified\`, ask the user to open that link; you cannot do it
for them.

Over MCP there is a second way, for clients that cannot set a header: OAuth 2.1. Your
client connects with the URL alone; \`/mcp\` answers 401 with
\`WWW-Authenticate: Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"\`,
your client registers itself and sends the user to a sign-in and consent page once,
then uses the access token it gets (valid on \`/mcp\` only; refresh it with the refresh
token). MCP SDKs do this on their own.

## With MCP (preferred when your client speaks it)

Endpoint \`${base}${MCP_PATH}\` (Streamable HTTP, stateless), same bearer key or an OAuth token.

1. \`edit_image\` with \`image_url\` (a public https: URL of the image, fetched by the
   service: the easiest for a real photo) or \`image\` (base64 JPEG, PNG or WebP; a
   \`data:image/...;base64,\` prefix is fine), and \`prompt\`. Optional: \`format\`,
   \`quality\` (1-100), \`mask\` (base64 PNG, white = area to edit), \`detect\`
   ("person . car"), \`idempotency_key\` (reuse it if you retry the same call, to avoid
   paying twice), \`wait_seconds\` (0 to ${MAX_WAIT_SECONDS}: see below). Returns \`job_id\`.
2. \`get_job_status\` with the \`job_id\` every 2-5 seconds until \`status\` is \`done\`
   or \`error\`. Do not poll faster.
3. \`get_job_result\` with the \`job_id\`: \`url\` is a signed HTTPS link to the image,
   valid for 1 hour; download it with a plain GET (no header needed). Also \`format\`,
   \`width\`, \`height\`, \`credits_remaining\`. Besides the JSON, the result holds a
   \`resource_link\` content item to the same url, and the picture itself as \`image\`
   content (base64) when it is at most ${MAX_INLINE_IMAGE_BYTES / 1024} KiB: look at it to check the edit.

Shortcut: \`edit_image\` with \`wait_seconds\` (say 30) waits for the job and, when it
finishes in time, returns what \`get_job_result\` would (with \`status: "done"\`, the link
and the picture) in one call; a failed job answers \`job_failed\`; a job still running
answers \`status: "pending"\` and its \`job_id\`, so carry on with step 2.

A tool error is a result with \`isError\` whose text is JSON \`{"code", "message"}\`
(plus \`retry_after_seconds\` for \`rate_limited\`); the message says what to do.

## With plain HTTP

1. \`POST ${base}/api/process\`, \`Content-Type: application/json\`,
   body \`{"image": "<base64>", "prompt": "remove the background"}\`, and an
   \`Idempotency-Key: <uuid>\` header → \`{"job_id": "job_...", "credits_remaining": 9}\`.
2. \`GET ${base}/api/process/status?job_id=job_...\` → \`{"status": "pending"}\` until
   it is \`{"status": "done", "width": ..., "height": ..., "format": "png", ...}\`.
3. \`GET ${base}/api/process/result?job_id=job_...\` → 202 while pending, 500 if it
   failed, else \`{"url": "...", ...}\`. Download \`url\`.

## Writing prompts

- "remove the background" / "make the background transparent": PNG with alpha.
- "remove the person on the left", "erase the car", "delete the dog": object removal.
  People, vehicles, animals and common objects (COCO classes) are found automatically;
  for text, watermarks or scratches send a \`mask\`.
- Anything else is an adjustment: "make it black and white", "a lot brighter",
  "more contrast", "warmer", "crop to square", "rotate 90 degrees", "resize to 800 wide",
  "add a 20px white border", "put it on a white background", "blur the background".
  Several instructions in one prompt apply in order. "blur the faces", and a cut-out
  "with a drop shadow" or "with a white outline", are built in too.
- Semantic edits ("make it a watercolour", "add snow", "replace the sky") need the
  server's generative provider: \`GET ${base}/api/capabilities\` says whether it has one.
  A prompt the server cannot carry out whole is refused at once (400
  \`unsupported_instruction\`, nothing charged), never half done.

## When something goes wrong

| code | what to do |
|---|---|
| \`invalid_request\` (400) | fix the field the message names; do not retry unchanged |
| \`unsupported_instruction\` (400) | the server cannot do this prompt (nothing charged); rephrase with what the message or \`/api/capabilities\` lists |
| \`email_unverified\` (403) | the account owner must open the verification email |
| \`insufficient_credits\` (402) | the balance is empty; tell the user (where the server sells credits, \`POST /api/billing/checkout\` gives them a page to pay on) |
| \`rate_limited\` (429) | wait the \`Retry-After\` seconds (over MCP: \`retry_after_seconds\`), then retry with the same idempotency key |
| \`too_many_in_flight\` (429) | wait for running jobs to finish, then retry |
| \`image_fetch_failed\` (502) | the host of \`image_url\` failed; nothing was charged; retry later with the same idempotency key |
| \`job_failed\` (500, on the result) | the edit could not be done; the credit was refunded; \`error_code\` and \`error_message\` say why (rephrase, send a mask, or retry later for \`upstream_failed\`) |
`;
}

export function termsPage(config: DiscoveryConfig): string {
  return `Retouch at ${config.publicBaseUrl} is a self-hosted instance of the open-source Retouch service, run by its operator (${contactEmail(config)}).

Intended use: you own the images you send, or are authorized to make the changes you ask for. Removing watermarks, copyright notices, credentials or provenance signals is for authorized callers only.

Inputs are deleted as soon as a job settles; results are kept for the operator's retention period (24 hours by default) and are reachable only through signed links.
`;
}
