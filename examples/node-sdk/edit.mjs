// Edit a picture end to end with the Retouch SDK:
//   RETOUCH_API_KEY=pk_... node edit.mjs photo.jpg "remove the background" cutout.png
import { writeFile } from "node:fs/promises";
import { ApiError, Retouch } from "@retouch/sdk";

const [image, prompt, output = "result"] = process.argv.slice(2);
if (!image || !prompt) {
  console.error('usage: node edit.mjs <image path or URL> "<prompt>" [output file]');
  process.exit(2);
}

const retouch = new Retouch({
  baseUrl: process.env.RETOUCH_BASE_URL ?? "http://localhost:3000",
  apiKey: process.env.RETOUCH_API_KEY,
});

try {
  // Submits (with an Idempotency-Key, so retries never charge twice), follows the job on its progress stream
  // (polling where the stream is cut), and returns the result.
  const result = await retouch.edit(image, prompt, { format: "png", intervalMs: 2000 });
  const file = output.includes(".") ? output : `${output}.${result.format}`;
  await writeFile(file, await result.download());
  console.log(
    `saved ${file}: ${result.format} ${result.width}x${result.height}, ${result.processing_time_ms} ms, ${result.credits_remaining} credits left`,
  );
} catch (error) {
  if (error instanceof ApiError) {
    // The API's own code says what to do: email_unverified, insufficient_credits, rate_limited, job_failed...
    console.error(`Retouch said ${error.code} (${error.status}): ${error.message}`);
    process.exit(1);
  }
  throw error;
}
