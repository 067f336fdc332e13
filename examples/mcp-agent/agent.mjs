// What an agent does with Retouch's MCP tools, without the LLM in the loop:
//   RETOUCH_API_KEY=pk_... node agent.mjs photo.jpg "remove the background" cutout.png
import { readFile, writeFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [image, prompt, output = "result"] = process.argv.slice(2);
if (!image || !prompt || !process.env.RETOUCH_API_KEY) {
  console.error('usage: RETOUCH_API_KEY=pk_... node agent.mjs <image> "<prompt>" [output]');
  process.exit(2);
}
const base = process.env.RETOUCH_BASE_URL ?? "http://localhost:3000";

const client = new Client({ name: "retouch-example-agent", version: "1.0.0" });
await client.connect(
  new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.RETOUCH_API_KEY}` } },
  }),
);
console.log(
  `connected to ${client.getServerVersion()?.name}; tools: ${(await client.listTools()).tools.map((tool) => tool.name).join(", ")}`,
);

/** Calls a tool; a tool error's text is JSON {code, message}. */
async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) {
    const { code, message } = JSON.parse(result.content[0].text);
    throw new Error(`${name} failed with ${code}: ${message}`);
  }
  return result.structuredContent;
}

try {
  const started = await call("edit_image", {
    image: (await readFile(image)).toString("base64"),
    prompt,
    // Reuse the same key if this call is retried: the edit is charged once.
    idempotency_key: crypto.randomUUID(),
  });
  console.log(`job ${started.job_id} started; ${started.credits_remaining} credits left`);

  let status;
  do {
    await new Promise((resolve) => setTimeout(resolve, 2000)); // the service asks for 2-5 s between polls
    status = await call("get_job_status", { job_id: started.job_id });
  } while (status.status === "pending");
  // error_code says why (nothing_detected, model_unavailable, ...), error_message what to do.
  if (status.status === "error")
    throw new Error(`the edit failed (${status.error_code}): ${status.error_message} Its credit was refunded.`);

  const result = await call("get_job_result", { job_id: started.job_id });
  const file = output.includes(".") ? output : `${output}.${result.format}`;
  const download = await fetch(result.url); // a plain GET: the signed link is the credential
  await writeFile(file, Buffer.from(await download.arrayBuffer()));
  console.log(`saved ${file}: ${result.format} ${result.width}x${result.height}`);
} finally {
  await client.close();
}
