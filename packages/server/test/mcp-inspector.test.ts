import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { base64, productPhoto } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The MCP Inspector's CLI (`npx @modelcontextprotocol/inspector --cli`, the
 * pinned devDependency's binary, no download at run time) against the running
 * service with a key header: it lists the tools, checks their schemas'
 * portability (`--strict`), and calls them. `--stored-auth-only` makes a
 * refused key fail at once instead of starting an interactive sign-in.
 */
let app: TestApp;
let account: KeyedAccount;
let home: string;
const launcher = path.join(
  path.dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/inspector/package.json")),
  "clients/launcher/build/index.js",
);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One CLI run, bounded in time, with a scratch home (its catalog and client config stay out of the user's). */
function inspector(args: string[], key = account.key): Promise<Run> {
  const argv = [
    launcher,
    "--cli",
    `${app.url}/mcp`,
    "--transport",
    "http",
    "--header",
    `Authorization: Bearer ${key}`,
    "--stored-auth-only",
    "--format",
    "json",
    ...args,
  ];
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: home,
    MCP_CATALOG_PATH: path.join(home, "catalog.json"),
    MCP_CLIENT_CONFIG_PATH: path.join(home, "client.json"),
    NO_COLOR: "1",
    CI: "1",
  };
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

const parsed = (run: Run) => {
  expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(0);
  return JSON.parse(run.stdout);
};

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "retouch-inspector-"));
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  account = await keyedAccount(app);
}, 120_000);
afterAll(async () => {
  await app?.close();
  await rm(home, { recursive: true, force: true });
});

describe("the MCP Inspector CLI", () => {
  it("tools/list: the three tools with their titles and hints, and no schema portability problem (--strict)", async () => {
    const listed = parsed(await inspector(["--method", "tools/list", "--strict"]));
    // --strict exits 6 on an error-severity portability problem in a tool's schema.
    const tools = listed.result.tools as Array<{ name: string; title: string; annotations: object }>;
    expect(tools.map((tool) => tool.name).sort()).toEqual(["edit_image", "get_job_result", "get_job_status"]);
    expect(tools.find((tool) => tool.name === "edit_image")?.title).toBe("Edit an image");
    expect(tools.find((tool) => tool.name === "get_job_status")?.annotations).toMatchObject({ readOnlyHint: true });
  });

  it("tools/call: edit_image with wait_seconds, then get_job_result, and a domain error as a tool error", async () => {
    const started = parsed(
      await inspector([
        "--method",
        "tools/call",
        "--tool-name",
        "edit_image",
        "--tool-args-json",
        JSON.stringify({ image: base64(await productPhoto()), prompt: "make it sepia", wait_seconds: 30 }),
      ]),
    );
    const done = started.result.structuredContent;
    expect(done).toMatchObject({ status: "done", job_id: expect.stringMatching(/^job_/), format: "jpeg" });
    const result = parsed(
      await inspector(["--method", "tools/call", "--tool-name", "get_job_result", "--tool-arg", `job_id=${done.job_id}`]),
    );
    const content = result.result.content as Array<{ type: string }>;
    expect(content.map((block) => block.type)).toEqual(["text", "resource_link", "image"]);

    const missing = await inspector([
      "--method",
      "tools/call",
      "--tool-name",
      "get_job_status",
      "--tool-arg",
      `job_id=job_${"0".repeat(26)}`,
    ]);
    // Exit 5: the tool answered isError; the result is still printed whole.
    expect(missing.code).toBe(5);
    const error = JSON.parse(missing.stdout).result;
    expect(error.isError).toBe(true);
    expect(JSON.parse(error.content[0].text)).toEqual({ code: "not_found", message: `No job job_${"0".repeat(26)}.` });
  });

  it("a wrong key fails at once with the 401, without an interactive sign-in", async () => {
    const refused = await inspector(["--method", "tools/list"], "pk_wrong");
    // Exit 3, auth_required: it saw the 401 and, told to use stored credentials only, did not start a sign-in.
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stderr).error).toMatchObject({
      code: "auth_required",
      message: expect.stringContaining("Send your Retouch API key"),
    });
  });
});
