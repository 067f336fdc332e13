import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { trpc } from "../api/trpc";
import { exampleAfter, exampleBefore, LANDING_EXAMPLES } from "../components/landing-examples";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";
import { WORKFLOW_BLURBS, workflowTitle } from "../components/workflows";

export function LandingPage() {
  useTitle("Edit images with a sentence");
  const session = useQuery(trpc.auth.session.queryOptions());
  const capabilities = useQuery(trpc.service.capabilities.queryOptions());
  const signedIn = Boolean(session.data);
  return (
    <PublicLayout wide>
      <section className="hero">
        <h1>Edit images with a sentence</h1>
        <p className="lead">
          Send a photo and a plain instruction — “remove the background”, “make it black and white” — and get the edited picture
          back. Self-hosted, open source, one credit per image, refunded if an edit fails.
        </p>
        <div className="actions">
          {signedIn ? (
            <Link href="/dashboard" className="button-link">
              Go to your dashboard
            </Link>
          ) : (
            <>
              <Link href="/sign-up" className="button-link">
                Create an account
              </Link>
              <Link href="/sign-in" className="button-link button-link-quiet">
                Sign in
              </Link>
            </>
          )}
        </div>
        <p className="muted">New accounts start with 10 free credits.</p>
      </section>
      <section aria-labelledby="examples-title">
        <h2 id="examples-title">Made by this service</h2>
        <ul className="examples-grid">
          {LANDING_EXAMPLES.map((example) => (
            <li key={example.id}>
              <figure className="example">
                <div className="example-pair">
                  <img src={exampleBefore(example)} alt={`Before: ${example.subject}`} width={480} height={320} />
                  <div className={example.format === "png" ? "checkerboard" : undefined}>
                    <img
                      src={exampleAfter(example)}
                      alt={`After “${example.prompt}”: ${example.subject}${example.format === "png" ? ", cut out" : ""}`}
                      width={480}
                      height={320}
                    />
                  </div>
                </div>
                <figcaption>
                  “{example.prompt}” <span className="muted">{example.credit}; resized and edited by this service</span>
                </figcaption>
              </figure>
            </li>
          ))}
        </ul>
      </section>
      {capabilities.data ? (
        <section aria-labelledby="what-it-does">
          <h2 id="what-it-does">What you can ask for</h2>
          <ul className="cards">
            {capabilities.data.workflows.map((workflow) => (
              <li key={workflow.name} className="card">
                <h3>{workflowTitle(workflow.name)}</h3>
                <p>{WORKFLOW_BLURBS[workflow.name] ?? workflowTitle(workflow.name)}</p>
                <p className="muted">
                  {workflow.examples
                    // Examples that explain themselves: "remove this (with a mask)" needs the playground's brush.
                    .filter((example) => !example.includes("("))
                    .slice(0, 3)
                    .map((example) => `“${example}”`)
                    .join(" · ")}
                </p>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <section aria-labelledby="for-developers">
        <h2 id="for-developers">For developers and agents</h2>
        <p>
          A REST API (<a href="/docs">reference</a>, <a href="/openapi.json">OpenAPI</a>), a typed TypeScript SDK, a CLI and an
          MCP server for agents (<a href="/llms.txt">llms.txt</a>, <a href="/SKILL.md">SKILL.md</a>).
        </p>
      </section>
    </PublicLayout>
  );
}
