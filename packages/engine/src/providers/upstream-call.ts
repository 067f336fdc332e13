import { setTimeout as sleep } from "node:timers/promises";
import { EngineError } from "../engine-error";
import { throwIfCancelled } from "../work-checkpoint";

/**
 * One upstream behaviour for every hosted provider: a time limit per attempt,
 * retries with exponential backoff and jitter on 429, 5xx and network errors
 * (honouring Retry-After), a circuit breaker per provider, and the job's
 * AbortSignal. The vendors' SDKs have retry loops of their own, each
 * different (Replicate's retries a 429 five times at once, without waiting);
 * the adapters turn them off and let this module decide, so every vendor
 * behaves the same and the breaker sees every attempt.
 *
 * Hand-written rather than cockatiel's retry and breaker policies or p-retry:
 * a content refusal must leave the breaker as it was (neither a success that
 * closes a half-open breaker nor a failure), the open breaker's message says
 * for how long it stays open, the pause comes from the answer's Retry-After
 * (and one longer than the cap ends the edit at once), and the failure's
 * message is built from all tries; each library would need this code around it.
 *
 * Failures become EngineErrors whose messages are written here, from the
 * HTTP status and the vendor's short error code only: the vendor's own text
 * never reaches a message (and so never the logs or the caller), and
 * anything that looks like a key is redacted all the same.
 */

export interface UpstreamTuning {
  /** First backoff delay; doubled per retry, with ±50% jitter. Default 1 s. */
  backoffBaseMs?: number;
  /** Longest backoff delay, and the longest Retry-After honoured (longer ones end the edit). Default 30 s. */
  backoffMaxMs?: number;
  /** Consecutive failed attempts that open the breaker. Default 5. */
  breakerThreshold?: number;
  /** How long an open breaker fails calls at once before letting one through. Default 30 s. */
  breakerCooldownMs?: number;
  /** Between two polls of a vendor's asynchronous job (BFL, Replicate). Default 1 s. */
  pollIntervalMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_RETRIES = 2;

const DEFAULT_TUNING: Required<UpstreamTuning> = {
  backoffBaseMs: 1_000,
  backoffMaxMs: 30_000,
  breakerThreshold: 5,
  breakerCooldownMs: 30_000,
  pollIntervalMs: 1_000,
};

export function withDefaults(tuning: UpstreamTuning = {}): Required<UpstreamTuning> {
  return { ...DEFAULT_TUNING, ...Object.fromEntries(Object.entries(tuning).filter(([, value]) => value !== undefined)) };
}

/** How an attempt failed, as far as the retry policy is concerned. */
export type FailureKind =
  /** 429, 5xx, a network error or the attempt's time limit: worth another try. */
  | "transient"
  /** The vendor refused the prompt or picture under its content policy. */
  | "refused"
  /** The key was refused (401, 403 other than moderation): no retry, counts against the breaker. */
  | "auth"
  /** Anything else (400, 404, 422, an unusable answer): no retry. */
  | "rejected";

export interface FailureDetail {
  status?: number;
  /** The vendor's short error code (e.g. `moderation_blocked`), when it gives one. */
  code?: string;
  retryAfterMs?: number;
  network?: boolean;
  timeout?: boolean;
  /** What was wrong with a 200 answer, in our words. */
  unusable?: string;
}

/** Thrown by adapters (or built from what the HTTP layer saw) to tell the policy how an attempt failed. */
export class UpstreamFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    readonly detail: FailureDetail = {},
  ) {
    super(`upstream ${kind}${detail.status ? ` ${detail.status}` : ""}${detail.code ? ` ${detail.code}` : ""}`);
    this.name = "UpstreamFailure";
  }
}

/** The usual reading of an HTTP status. */
export function kindOfStatus(status: number): FailureKind {
  if (status === 429 || status === 408 || status >= 500) return "transient";
  if (status === 401 || status === 403) return "auth";
  return "rejected";
}

/** Retry-After as seconds or an HTTP date, in milliseconds from now. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The wait an answer asks for: OpenAI's `retry-after-ms` when present, else the standard Retry-After. */
export function retryAfterOf(headers: Headers): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms && /^\d+(?:\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms));
  return parseRetryAfter(headers.get("retry-after"));
}

/** A vendor error code fit for a message: short, plain, never free text. */
export function safeCode(code: unknown): string | undefined {
  return typeof code === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : undefined;
}

// Bearer tokens and the shapes of the vendors' keys, plus any long opaque run of key characters.
const KEY_LIKE =
  /\b(?:Bearer\s+\S+|Key\s+\S+|sk-[A-Za-z0-9_-]{6,}|r8_[A-Za-z0-9]{6,}|AIza[0-9A-Za-z_-]{10,}|[A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*[A-Za-z][A-Za-z0-9_-]{22,})\b/g;

/** The text with the given secrets and anything key-like replaced by "[redacted]". */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join("[redacted]");
  return out.replace(KEY_LIKE, "[redacted]");
}

/**
 * Per provider (one per engine thread): after `threshold` consecutive failed
 * attempts, calls fail at once for `cooldownMs`; then one call goes through
 * (half-open) and its outcome closes the breaker or opens it again.
 */
export class CircuitBreaker {
  private failures = 0;
  private openedAt: number | undefined;
  private trial = false;

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
  ) {}

  /** Whether a call may go out now; in the half-open state only one may. */
  tryAcquire(now = Date.now()): boolean {
    if (this.openedAt === undefined) return true;
    if (now - this.openedAt < this.cooldownMs || this.trial) return false;
    this.trial = true;
    return true;
  }

  /** Milliseconds until a call may go out again (0 when closed). */
  remainingMs(now = Date.now()): number {
    return this.openedAt === undefined ? 0 : Math.max(0, this.cooldownMs - (now - this.openedAt));
  }

  succeeded(): void {
    this.failures = 0;
    this.openedAt = undefined;
    this.trial = false;
  }

  failed(now = Date.now()): void {
    this.failures++;
    if (this.trial || this.failures >= this.threshold) this.openedAt = now;
    this.trial = false;
  }

  /** A call that ended without telling anything about the vendor's health (a refusal, a bad request, a cancel). */
  released(): void {
    this.trial = false;
  }

  get isOpen(): boolean {
    return this.openedAt !== undefined;
  }
}

const breakers = new Map<string, CircuitBreaker>();

/** Forgets every breaker's state (tests start each case with closed breakers). */
export function resetCircuitBreakers(): void {
  breakers.clear();
}

/** The breaker shared by every adapter instance for this provider and endpoint in this thread. */
export function breakerFor(key: string, tuning: Required<UpstreamTuning>): CircuitBreaker {
  let breaker = breakers.get(key);
  if (!breaker) {
    breaker = new CircuitBreaker(tuning.breakerThreshold, tuning.breakerCooldownMs);
    breakers.set(key, breaker);
  }
  return breaker;
}

/**
 * The fetch an adapter hands its SDK for one attempt: bound to the attempt's
 * signal, and it keeps the first failed answer. A second request after a
 * failed answer (an SDK's own immediate retry) gets that answer again without
 * reaching the network, so only this module decides when to try again.
 */
export class AttemptHttp {
  /** The first non-2xx answer or network error of this attempt. */
  failure: UpstreamFailure | undefined;
  private replay: { status: number; headers: Headers; body: string } | undefined;
  readonly fetch: typeof fetch;

  constructor(readonly signal: AbortSignal) {
    this.fetch = (input, init) => this.send(input, init);
  }

  private async send(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    if (this.replay) return new Response(this.replay.body, { status: this.replay.status, headers: this.replay.headers });
    if (this.failure) throw this.failure;
    const signal = init?.signal ? AbortSignal.any([init.signal, this.signal]) : this.signal;
    let response: Response;
    try {
      // Looked up at each call: a test's interceptor (msw) replaces the global fetch.
      response = await globalThis.fetch(input, { ...init, signal });
    } catch (error) {
      if (this.signal.aborted) throw error;
      this.failure = new UpstreamFailure("transient", { network: true });
      // Not a TypeError with a network code: SDKs that retry transport errors themselves (fal) leave this one alone.
      throw this.failure;
    }
    if (response.ok) return response;
    const body = await response.text().catch(() => "");
    this.replay = { status: response.status, headers: response.headers, body };
    this.failure = new UpstreamFailure(kindOfStatus(response.status), {
      status: response.status,
      retryAfterMs: retryAfterOf(response.headers),
      code: vendorCode(body),
    });
    return new Response(body, { status: response.status, headers: response.headers });
  }

  /** A plain request under this attempt (BFL, Stability, downloads): non-2xx answers throw an UpstreamFailure. */
  async request(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const response = await this.fetch(url, init);
    if (!response.ok) throw this.failure ?? new UpstreamFailure(kindOfStatus(response.status), { status: response.status });
    return response;
  }
}

/** The short error code in a vendor's JSON error body, if it has one in a usual place. */
function vendorCode(body: string): string | undefined {
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    const error = json.error as Record<string, unknown> | string | undefined;
    const candidates = [
      typeof error === "object" ? error?.code : undefined,
      typeof error === "object" ? error?.status : undefined,
      typeof error === "object" ? error?.type : undefined,
      json.code,
      json.name,
      Array.isArray(json.detail) ? (json.detail[0] as Record<string, unknown> | undefined)?.type : undefined,
    ];
    return candidates.map(safeCode).find((code) => code !== undefined);
  } catch {
    return undefined;
  }
}

export interface UpstreamPolicy {
  /** The vendor as people know it, for messages: "OpenAI". */
  vendor: string;
  timeoutMs: number;
  maxRetries: number;
  breaker: CircuitBreaker;
  tuning: Required<UpstreamTuning>;
  /** Redacted from every message. */
  secrets: readonly (string | undefined)[];
  /**
   * The adapter's reading of a failed attempt, before the default one (the
   * thrown UpstreamFailure, else the failed HTTP answer): a refusal told by
   * an error code, an SDK's own error class. Undefined = the default.
   */
  classify?: (error: unknown, http: AttemptHttp) => UpstreamFailure | undefined;
}

export interface UpstreamResult<T> {
  value: T;
  /** Wall time from the first attempt to the answer, retries and their waits included. */
  latencyMs: number;
}

/** Runs `attempt` under the policy; every failure comes out as an EngineError. */
export async function callUpstream<T>(
  policy: UpstreamPolicy,
  signal: AbortSignal | undefined,
  attempt: (http: AttemptHttp) => Promise<T>,
): Promise<UpstreamResult<T>> {
  const { breaker, tuning } = policy;
  const started = performance.now();
  let tries = 0;
  for (;;) {
    throwIfCancelled(signal);
    if (!breaker.tryAcquire()) throw openBreakerError(policy);
    tries++;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error("upstream attempt timed out")), policy.timeoutMs);
    const http = new AttemptHttp(signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal);
    let failure: UpstreamFailure;
    try {
      const value = await attempt(http);
      breaker.succeeded();
      return { value, latencyMs: Math.round(performance.now() - started) };
    } catch (error) {
      if (signal?.aborted) {
        breaker.released();
        throwIfCancelled(signal);
      }
      failure = timeout.signal.aborted
        ? new UpstreamFailure("transient", { timeout: true })
        : (policy.classify?.(error, http) ??
          (error instanceof UpstreamFailure ? error : undefined) ??
          http.failure ??
          unexpected(error));
    } finally {
      clearTimeout(timer);
    }
    if (failure.kind === "refused") {
      // A refusal is a healthy vendor saying no: it neither opens nor closes the breaker.
      breaker.released();
      throw refusedError(policy);
    }
    if (failure.kind === "transient" || failure.kind === "auth") breaker.failed();
    else breaker.released();
    const retryAfter = failure.detail.retryAfterMs;
    const retry =
      failure.kind === "transient" &&
      tries <= policy.maxRetries &&
      !breaker.isOpen &&
      (retryAfter === undefined || retryAfter <= tuning.backoffMaxMs);
    if (!retry) throw failedError(policy, failure, tries);
    await wait(Math.max(retryAfter ?? 0, backoff(tries, tuning)), signal);
  }
}

function unexpected(error: unknown): UpstreamFailure {
  // A TypeError or the like from an SDK reading an answer it did not expect; never a network error (AttemptHttp sees those).
  return new UpstreamFailure("rejected", { unusable: error instanceof Error ? error.name : "unknown error" });
}

/** Exponential backoff with ±50% jitter, so threads that failed together do not retry together. */
function backoff(tries: number, tuning: Required<UpstreamTuning>): number {
  const base = Math.min(tuning.backoffMaxMs, tuning.backoffBaseMs * 2 ** (tries - 1));
  return Math.round(base * (0.5 + Math.random()));
}

async function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    throwIfCancelled(signal);
  }
}

/** Polls until `check` returns a value, under the attempt's signal (its time limit covers the whole job). */
export async function pollUntil<T>(http: AttemptHttp, intervalMs: number, check: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    await sleep(intervalMs, undefined, { signal: http.signal });
  }
}

function seconds(ms: number): string {
  return `${Math.max(1, Math.round(ms / 1000))} s`;
}

function message(policy: UpstreamPolicy, text: string): string {
  return redact(text, policy.secrets);
}

function tried(tries: number): string {
  return tries === 1 ? "once" : `${tries} times`;
}

function openBreakerError(policy: UpstreamPolicy): EngineError {
  return new EngineError(
    "upstream_failed",
    message(
      policy,
      `The image provider (${policy.vendor}) failed ${policy.tuning.breakerThreshold} times in a row, so Retouch is not calling it for the next ${seconds(policy.breaker.remainingMs())}; try again later.`,
    ),
  );
}

function refusedError(policy: UpstreamPolicy): EngineError {
  return new EngineError(
    "content_refused",
    message(
      policy,
      `The image provider (${policy.vendor}) refused this prompt or picture under its content policy; change the prompt or the picture and try again.`,
    ),
  );
}

function failedError(policy: UpstreamPolicy, failure: UpstreamFailure, tries: number): EngineError {
  const { vendor } = policy;
  const { status, code, timeout, network, unusable, retryAfterMs } = failure.detail;
  const withCode = code ? `, code ${code}` : "";
  let text: string;
  if (timeout) {
    text = `The image provider (${vendor}) did not answer within ${seconds(policy.timeoutMs)} (tried ${tried(tries)}); try again later.`;
  } else if (network) {
    text = `The image provider (${vendor}) could not be reached (tried ${tried(tries)}); check the server's network access and try again.`;
  } else if (status === 429) {
    text =
      retryAfterMs !== undefined && retryAfterMs > policy.tuning.backoffMaxMs
        ? `The image provider (${vendor}) is limiting requests and asked Retouch to wait ${seconds(retryAfterMs)}; try again then.`
        : `The image provider (${vendor}) is limiting requests (HTTP 429, tried ${tried(tries)}); try again in a minute.`;
  } else if (failure.kind === "auth") {
    text = `The image provider (${vendor}) refused the configured API key (HTTP ${status}${withCode}); the server's operator should check the key and its permissions.`;
  } else if (status !== undefined && status >= 500) {
    text = `The image provider (${vendor}) failed (HTTP ${status}${withCode}, tried ${tried(tries)}); try again later.`;
  } else if (status !== undefined) {
    text = `The image provider (${vendor}) rejected the request (HTTP ${status}${withCode}); this picture or prompt may not suit it, or the configured model may be wrong.`;
  } else {
    text = `The image provider (${vendor}) answered without a usable image (${unusable ?? "unexpected answer"}); try again later.`;
  }
  return new EngineError("upstream_failed", message(policy, text));
}
