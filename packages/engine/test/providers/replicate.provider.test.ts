import { HttpResponse, http } from "msw";
import { describe, expect, it } from "vitest";
import { createGenerativeProvider } from "../../src/providers/generative-providers";
import { answerPng, failureOf, KEY, mswServer, photo, providerContract, TUNING, VENDOR_TEXT } from "./provider-contract";

/**
 * Replicate's HTTP API as documented: `POST
 * /v1/models/{owner}/{name}/predictions` with `Authorization: Bearer` and
 * `Prefer: wait`, `{ input }` in, a prediction (`id`, `status`, `output`,
 * `error`, `urls`) out; `GET /v1/predictions/{id}` until it has succeeded;
 * the output a link on replicate.delivery; errors as `{ title, detail, status
 * }`; a flagged input or output fails the prediction with E005.
 */
const CREATE = "https://api.replicate.com/v1/models/black-forest-labs/flux-kontext-pro/predictions";
const GET = "https://api.replicate.com/v1/predictions/:id";
const OUTPUT = "https://replicate.delivery/xezq/abc123/output.png";
const server = mswServer();

const prediction = (status: string, extra: object = {}) => ({
  id: "p-42",
  model: "black-forest-labs/flux-kontext-pro",
  version: "hidden",
  input: {},
  status,
  created_at: "2026-11-23T08:00:00Z",
  urls: { get: "https://api.replicate.com/v1/predictions/p-42", cancel: "https://api.replicate.com/v1/predictions/p-42/cancel" },
  ...extra,
});

function output(answer: Buffer) {
  return http.get(OUTPUT, () =>
    HttpResponse.arrayBuffer(new Uint8Array(answer).buffer, { headers: { "content-type": "image/png" } }),
  );
}

describe("Replicate", () => {
  providerContract(server, {
    options: { provider: "replicate" },
    vendor: "Replicate",
    submitUrl: CREATE,
    success: (answer) => [
      http.post(CREATE, () => HttpResponse.json(prediction("processing"), { status: 201 })),
      http.get(GET, () => HttpResponse.json(prediction("succeeded", { output: OUTPUT }))),
      output(answer),
    ],
    refusal: () => [
      http.post(CREATE, () =>
        HttpResponse.json(
          prediction("failed", {
            error: `The input or output was flagged as sensitive. Please try again with different inputs. (E005) ${VENDOR_TEXT}`,
          }),
          { status: 201 },
        ),
      ),
    ],
    errorBody: (status) => ({ title: "Error", detail: `${VENDOR_TEXT} token ${KEY}`, status }),
  });

  it("sends the documented prediction: key, Prefer: wait, Kontext's inputs with the picture as a data URI", async () => {
    let body: { input?: Record<string, unknown> } | undefined;
    let auth: string | null = null;
    let prefer: string | null = null;
    server.use(
      http.post(CREATE, async ({ request }) => {
        auth = request.headers.get("authorization");
        prefer = request.headers.get("prefer");
        body = (await request.json()) as typeof body;
        // Prefer: wait answered with the finished prediction: no polling.
        return HttpResponse.json(prediction("succeeded", { output: OUTPUT }), { status: 201 });
      }),
      output(await answerPng(1024, 640)),
    );
    const edit = await createGenerativeProvider({ provider: "replicate", apiKey: KEY }, TUNING).edit(
      { image: await photo(), prompt: "change the shirt to red", negativePrompt: "logos", maxPixels: 40_000_000 },
      {},
    );
    expect(auth).toBe(`Bearer ${KEY}`);
    expect(prefer).toBe("wait");
    expect(body?.input).toMatchObject({
      prompt: "change the shirt to red. Avoid: logos.",
      aspect_ratio: "match_input_image",
      output_format: "png",
    });
    expect(String(body?.input?.input_image)).toMatch(/^data:image\/jpeg;base64,\/9j\//);
    expect([edit.image.width, edit.image.height]).toEqual([320, 200]);
  });

  it("another model gets the picture as `image`; a version pins it through /v1/predictions", async () => {
    let body: { version?: string; input?: Record<string, unknown> } | undefined;
    server.use(
      http.post("https://api.replicate.com/v1/predictions", async ({ request }) => {
        body = (await request.json()) as typeof body;
        return HttpResponse.json(prediction("succeeded", { output: [OUTPUT] }), { status: 201 });
      }),
      output(await answerPng(512, 512)),
    );
    await createGenerativeProvider({ provider: "replicate", apiKey: KEY, model: "qwen/qwen-image-edit:0123abcd" }, TUNING).edit(
      { image: await photo(), prompt: "add snow", maxPixels: 40_000_000 },
      {},
    );
    expect(body?.version).toBe("0123abcd");
    expect(String(body?.input?.image)).toMatch(/^data:image\/jpeg;base64,/);
    expect(body?.input?.input_image).toBeUndefined();
  });

  it("a 429 is not retried five times at once by the client: one request, then the wait it asks for", async () => {
    let posts = 0;
    server.use(
      http.post(CREATE, () => {
        posts++;
        return HttpResponse.json({ title: "Too many requests", status: 429 }, { status: 429, headers: { "retry-after": "60" } });
      }),
    );
    const error = await failureOf(
      createGenerativeProvider({ provider: "replicate", apiKey: KEY }, TUNING).edit(
        { image: await photo(), prompt: "add snow", maxPixels: 40_000_000 },
        {},
      ),
    );
    // Sixty seconds is more than the longest wait honoured (5 s in these tests): the edit ends and says so.
    expect(posts).toBe(1);
    expect(error.message).toContain("asked Retouch to wait 60 s");
  });
});
