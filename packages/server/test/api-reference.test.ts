import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../../../test/support/http-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { type ApiDocument, renderApiReference } from "../src/discovery/api-reference";

/**
 * The documentation stands alone: the API reference is the project's own (docs/api.md, rendered from
 * the OpenAPI document the service serves, and that document interactive at /docs), and no link in
 * the README or docs/ leads outside the repository except to a public https site.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
let app: TestApp;
let served: ApiDocument;

beforeAll(async () => {
  app = await startTestApp({}, { role: "api" });
  served = (await request(app.url, "GET", "/openapi.json")).body as ApiDocument;
}, 120_000);
afterAll(() => app?.close());

describe("docs/api.md", () => {
  it("is the rendering of the served /openapi.json (run `pnpm docs:api` after changing a route)", async () => {
    const file = await readFile(path.join(root, "docs/api.md"), "utf8");
    expect(file, "docs/api.md is stale: run `pnpm docs:api`").toBe(renderApiReference(served));
  });

  it("documents every route with its credentials and its error codes", async () => {
    const file = await readFile(path.join(root, "docs/api.md"), "utf8");
    for (const [route, item] of Object.entries(served.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const section = file.split(`\n### ${method.toUpperCase()} ${route}\n`)[1]?.split("\n### ")[0];
        expect(section, `${method} ${route}`).toBeDefined();
        expect(section).toMatch(/^Credentials: /m);
        // Each error code the operation can answer is named in its section.
        for (const response of Object.values(operation.responses ?? {})) {
          for (const code of response.description?.match(/`[a-z_]+`/g) ?? []) expect(section, `${route} ${code}`).toContain(code);
        }
      }
    }
    // Nothing of one deployment: the same file for every server.
    expect(file).not.toContain(app.url);
    expect(file).not.toMatch(/https?:\/\/(?:localhost|127\.0\.0\.1)/);
  });

  it("is served interactive at /docs, from /openapi.json", async () => {
    const page = await request(app.url, "GET", "/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    const script = await request(app.url, "GET", "/docs/assets/reference.js");
    expect(script.text).toContain("/openapi.json");
  });
});

/** Markdown files a reader of the repository meets: the README, docs/, and the packages' and examples' READMEs. */
async function markdownFiles(): Promise<string[]> {
  const found = ["README.md"];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(path.join(root, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== "node_modules" && entry.name !== "dist") await walk(relative);
      else if (entry.isFile() && entry.name.endsWith(".md")) found.push(relative);
    }
  };
  await walk("docs");
  for (const dir of ["packages", "examples"]) {
    for (const entry of await readdir(path.join(root, dir), { withFileTypes: true })) {
      if (entry.isDirectory() && existsSync(path.join(root, dir, entry.name, "README.md"))) {
        found.push(path.join(dir, entry.name, "README.md"));
      }
    }
  }
  return found;
}

/** Link targets of inline links, images and reference definitions, outside code blocks and code spans. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  const inline = [...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1] ?? "");
  const definitions = [...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1] ?? "");
  return [...inline, ...definitions];
}

/** Why a link target leaves the repository for somewhere a reader may not reach; undefined when it is fine. */
function problem(file: string, target: string): string | undefined {
  if (target.startsWith("#")) return undefined;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
    if (!target.startsWith("https://")) return "not https";
    const host = new URL(target).hostname;
    if (/^(?:localhost|127\.|10\.|192\.168\.|0\.0\.0\.0|\[?::1\]?)/.test(host) || !host.includes(".")) return "not a public host";
    return undefined;
  }
  const resolved = path.resolve(root, path.dirname(file), decodeURIComponent(target.split("#")[0] ?? ""));
  if (path.relative(root, resolved).startsWith("..")) return "outside the repository";
  if (!existsSync(resolved)) return "no such file";
  return undefined;
}

describe("links in the README and docs/ (security: no path out of the repository)", () => {
  it("lead inside the repository, to files that exist, or to public https sites", async () => {
    const bad: string[] = [];
    for (const file of await markdownFiles()) {
      const text = await readFile(path.join(root, file), "utf8");
      for (const target of linkTargets(text)) {
        const why = problem(file, target);
        if (why) bad.push(`${file}: ${target} (${why})`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("are found by the checker, which refuses what it should", () => {
    expect(linkTargets("[spec](../shared/spec/service-spec.md) and ![shot](docs/a.png)\n[ref]: https://example.org/x")).toEqual([
      "../shared/spec/service-spec.md",
      "docs/a.png",
      "https://example.org/x",
    ]);
    expect(problem("README.md", "../shared/spec/service-spec.md")).toBe("outside the repository");
    expect(problem("docs/api.md", "../../etc/passwd")).toBe("outside the repository");
    expect(problem("README.md", "http://example.org")).toBe("not https");
    expect(problem("README.md", "https://localhost:3000/docs")).toBe("not a public host");
    expect(problem("README.md", "file:///etc/passwd")).toBe("not https");
    expect(problem("README.md", "docs/api.md#credentials")).toBeUndefined();
    expect(problem("README.md", "https://nodejs.org/en/download")).toBeUndefined();
  });
});
