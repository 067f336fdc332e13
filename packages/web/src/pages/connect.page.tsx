import { useQuery } from "@tanstack/react-query";
import { useBrowserKey } from "../api/browser-key";
import { trpc } from "../api/trpc";
import { CodeBlock } from "../components/code-block";
import { DashboardLayout } from "../components/dashboard-layout";
import { useTitle } from "../components/use-title";
import { workflowTitle } from "../components/workflows";

export function ConnectPage() {
  useTitle("Connect");
  const site = window.location.origin;
  const browserKey = useBrowserKey();
  const capabilities = useQuery(trpc.service.capabilities.queryOptions(undefined, { staleTime: 300_000 }));
  // Never the key itself on a page meant to be copied from: its prefix shows which key goes there.
  const key = browserKey?.prefix ?? "pk_...";
  const example = capabilities.data?.workflows[0]?.examples[0] ?? "remove the background";

  const mcp = JSON.stringify(
    { mcpServers: { retouch: { type: "http", url: `${site}/mcp`, headers: { Authorization: `Bearer ${key}` } } } },
    null,
    2,
  );
  const curl = `KEY=${key}   # your full key
{ printf '{"prompt": "${example}", "image": "'; base64 -w0 photo.jpg; printf '"}'; } > request.json
curl -s -X POST ${site}/api/process -H "Authorization: Bearer $KEY" \\
  -H 'Content-Type: application/json' -H "Idempotency-Key: $(uuidgen)" --data-binary @request.json
# {"job_id":"job_...","credits_remaining":9}
curl -s "${site}/api/process/status?job_id=job_..." -H "Authorization: Bearer $KEY"   # every 2-5 s until done
curl -s "${site}/api/process/result?job_id=job_..." -H "Authorization: Bearer $KEY"   # a signed url to download`;
  const sdk = `import { writeFile } from "node:fs/promises";
import { Retouch } from "@retouch/sdk";

const retouch = new Retouch({ baseUrl: "${site}", apiKey: process.env.RETOUCH_API_KEY }); // ${key}
const result = await retouch.edit("photo.jpg", "${example}");
await writeFile(\`edited.\${result.format}\`, await result.download()); // the format the service wrote`;
  const cli = `retouch login --base-url ${site} --key ${key}
retouch edit photo.jpg "${example}" -o edited.jpg`;

  return (
    <DashboardLayout>
      <h1>Connect</h1>
      <p className="muted">
        Everything talks to <code>{site}</code> with an API key. Replace <code>{key}</code> with your full key (shown once when
        you created it).
      </p>
      <section aria-labelledby="mcp-title">
        <h2 id="mcp-title">MCP (agents)</h2>
        <p>
          Streamable HTTP at <code>{site}/mcp</code>, with the tools <code>edit_image</code>, <code>get_job_status</code> and{" "}
          <code>get_job_result</code>. In your MCP client's configuration:
        </p>
        <CodeBlock label="MCP configuration" code={mcp} />
      </section>
      <section aria-labelledby="curl-title">
        <h2 id="curl-title">curl</h2>
        <CodeBlock label="curl commands" code={curl} />
      </section>
      <section aria-labelledby="sdk-title">
        <h2 id="sdk-title">TypeScript SDK</h2>
        <CodeBlock label="SDK example" code={sdk} />
      </section>
      <section aria-labelledby="cli-title">
        <h2 id="cli-title">CLI</h2>
        <CodeBlock label="CLI commands" code={cli} />
      </section>
      <section aria-labelledby="docs-title">
        <h2 id="docs-title">Reference</h2>
        <ul className="links">
          <li>
            <a href="/docs">API reference</a> and <a href="/openapi.json">OpenAPI document</a>
          </li>
          <li>
            <a href="/llms.txt">llms.txt</a> and <a href="/SKILL.md">SKILL.md</a> for agents, <a href="/mcp.json">MCP manifest</a>
          </li>
        </ul>
        {capabilities.data ? (
          <>
            <h3>What this server can do</h3>
            <ul className="links">
              {capabilities.data.workflows.map((workflow) => (
                <li key={workflow.name}>
                  <strong>{workflowTitle(workflow.name)}</strong> ({workflow.description}):{" "}
                  {workflow.examples
                    .slice(0, 3)
                    .map((example) => `“${example}”`)
                    .join(", ")}
                </li>
              ))}
              {capabilities.data.generative_provider ? (
                <li>
                  Generative edits by {capabilities.data.generative_provider.name} ({capabilities.data.generative_provider.model})
                </li>
              ) : (
                <li>No generative provider is configured: edits the built-in engine cannot do are refused, nothing charged.</li>
              )}
            </ul>
          </>
        ) : null}
      </section>
    </DashboardLayout>
  );
}
