import { createTRPCClient, httpLink, type TRPCClient, TRPCClientError } from "@trpc/client";
import { AbortedError, ApiError, type ErrorCode, JobFailedError, LocalError, NetworkError, TimeoutError } from "./errors";
import type { ImageInput } from "./images";
import { type BatchItem, type EditOptions, toWireItem } from "./process-item";
import type { AppRouter, ErrorShape } from "./router.generated";

type Outputs = {
  submit: AppRouter["process"]["submit"]["_def"]["$types"]["output"];
  status: AppRouter["process"]["status"]["_def"]["$types"]["output"];
  result: AppRouter["process"]["result"]["_def"]["$types"]["output"];
  session: AppRouter["auth"]["signIn"]["_def"]["$types"]["output"];
  capabilities: AppRouter["service"]["capabilities"]["_def"]["$types"]["output"];
  account: AppRouter["account"]["get"]["_def"]["$types"]["output"];
  jobs: AppRouter["jobs"]["list"]["_def"]["$types"]["output"];
  sessionState: AppRouter["auth"]["session"]["_def"]["$types"]["output"];
  connectedApps: AppRouter["connectedApps"]["list"]["_def"]["$types"]["output"];
  billing: AppRouter["billing"]["state"]["_def"]["$types"]["output"];
};

type JobsInput = AppRouter["jobs"]["list"]["_def"]["$types"]["input"];
/** Narrows a jobs listing (the service filters): a status, a workflow, whole UTC days `from`/`to` (YYYY-MM-DD, both included). */
export type JobFilters = Pick<JobsInput, "status" | "workflow" | "from" | "to">;

export type SingleSubmission = Extract<Outputs["submit"], { job_id: string }>;
export type BatchSubmission = Extract<Outputs["submit"], { batch_id: string }>;
export type JobStatus = Extract<Outputs["status"], { status: string }>;
export type BatchStatus = Extract<Outputs["status"], { batch_id: string }>;
export type JobResult = Extract<Outputs["result"], { url: string }>;
export type Capabilities = Outputs["capabilities"];
/** Plan, limits, balance and this month's usage (`GET /api/account`). */
export type Account = Outputs["account"];
/** One page of `GET /api/jobs`: `jobs` newest first, and `next_cursor` (null on the last page). */
export type JobsPage = Outputs["jobs"];
export type JobListing = JobsPage["jobs"][number];
/** An MCP client the person approved through OAuth instead of giving it a key (`GET /api/connected-apps`). */
export type ConnectedApp = Outputs["connectedApps"]["apps"][number];
/** Plan, subscription, balance and allowance, what is on sale, and the purchases (`GET /api/billing`). */
export type BillingState = Outputs["billing"];
/** A plan that can be bought. */
export type PaidPlan = BillingState["plans"][number]["plan"];
/** The signed-in user and when the session ends, or null (`GET /auth/get-session`). */
export type SessionState = Outputs["sessionState"];
export type Session = Outputs["session"] & {
  /** `name=value` of the session cookie, to send as a `Cookie` header (Node; browsers keep it themselves). */
  cookie: string | undefined;
};

export interface RetouchOptions {
  /** The service's address, e.g. `https://retouch.example.com`. */
  baseUrl: string;
  /** A `pk_` key: sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Or a session cookie (`retouch.session_token=...`), for the key-management calls. */
  sessionCookie?: string;
  /** Retries of a call answered 429 (honouring Retry-After), 502, or lost on the network. Default 3. */
  maxRetries?: number;
  fetch?: typeof fetch;
}

export interface WaitOptions<S = JobStatus> {
  /** Time between status checks when polling (the stream's fallback); the service asks for 2 to 5 s. Default 2000. */
  intervalMs?: number;
  /** Give up (TimeoutError) after this long. Default 10 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called with each new status (the status endpoint's JSON), the terminal one included. */
  onProgress?: (status: S) => void;
  /**
   * Follow the progress stream (`GET /api/process/events`, needs an API key);
   * false: poll the status only. Polling is the fallback anyway when the
   * stream is refused or cut. Default true.
   */
  stream?: boolean;
  /**
   * Where polling reads the status instead of the status endpoint (which takes
   * a key): the dashboard reads its session's jobs through its own procedure.
   */
  poll?: (signal: AbortSignal) => Promise<S>;
}

interface CallContext {
  idempotencyKey?: string;
  [key: string]: unknown;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError());
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

function toError(error: unknown): Error {
  if (error instanceof ApiError || error instanceof LocalError) return error;
  if (error instanceof TRPCClientError) {
    const data = (error.shape as ErrorShape | undefined)?.data ?? (error.data as ErrorShape["data"] | undefined);
    if (data?.code) {
      return new ApiError({
        code: data.code,
        status: data.httpStatus,
        message: error.message,
        ...(data.retryAfterSeconds !== undefined ? { retryAfterSeconds: data.retryAfterSeconds } : {}),
        ...(data.issues ? { issues: data.issues } : {}),
        ...(data.failure ? { failure: data.failure } : {}),
      });
    }
    const cause = error.cause;
    if (cause && (cause.name === "AbortError" || (cause as { code?: string }).code === "ABORT_ERR"))
      return new AbortedError(undefined, { cause });
    return new NetworkError(`The Retouch API could not be reached: ${cause?.message ?? error.message}`, { cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}

function isRetryable(error: Error): boolean {
  if (error instanceof NetworkError) return true;
  return error instanceof ApiError && (error.status === 429 || error.status === 502 || error.status === 503);
}

/**
 * The Retouch client: every operation of the API, typed from the service's
 * router, plus the helpers an application wants (edit and wait, download,
 * images from paths, URLs, Blobs or bytes, safe retries).
 */
export class Retouch {
  /** The raw typed client, for anything the helpers do not cover. */
  readonly api: TRPCClient<AppRouter>;
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly maxRetries: number;

  constructor(private readonly options: RetouchOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.maxRetries = options.maxRetries ?? 3;
    this.api = this.createApi();
  }

  private createApi(onResponse?: (response: Response) => void): TRPCClient<AppRouter> {
    const { apiKey, sessionCookie } = this.options;
    return createTRPCClient<AppRouter>({
      links: [
        httpLink({
          url: `${this.baseUrl}/trpc`,
          fetch: async (input, init) => {
            const response = await this.fetchImpl(input, init as RequestInit);
            onResponse?.(response);
            return response;
          },
          headers: ({ op }) => {
            const headers: Record<string, string> = {};
            if (apiKey) headers.authorization = `Bearer ${apiKey}`;
            else if (sessionCookie) headers.cookie = sessionCookie;
            const key = (op.context as CallContext).idempotencyKey;
            if (key) headers["idempotency-key"] = key;
            return headers;
          },
        }),
      ],
    });
  }

  /**
   * Runs a call, retrying what is safe to retry, with back-off or the server's Retry-After.
   * Not p-retry: its pause cannot come from the failed answer (Retry-After), and the SDK
   * keeps to tRPC as its only runtime dependency.
   */
  private async call<T>(run: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await run();
      } catch (caught) {
        const error = toError(caught);
        if (attempt >= this.maxRetries || !isRetryable(error) || signal?.aborted) throw error;
        const backoff = Math.min(30_000, 500 * 2 ** attempt) * (0.8 + Math.random() * 0.4);
        const wait = error instanceof ApiError && error.retryAfterSeconds ? error.retryAfterSeconds * 1000 : backoff;
        await sleep(wait, signal);
      }
    }
  }

  // Accounts

  async signUp(input: { email: string; password: string; name: string }): Promise<Session> {
    return this.sessionCall((api) => api.auth.signUp.mutate(input));
  }

  async signIn(input: { email: string; password: string }): Promise<Session> {
    return this.sessionCall((api) => api.auth.signIn.mutate(input));
  }

  async resendVerification(email: string): Promise<void> {
    await this.call(() => this.api.auth.resendVerification.mutate({ email }));
  }

  /** Who the `sessionCookie` belongs to, or null when it is missing or ended. */
  session(): Promise<SessionState> {
    return this.call(() => this.api.auth.session.query());
  }

  /** Ends the `sessionCookie`'s session on the server (API keys are not affected). */
  async signOut(): Promise<void> {
    await this.call(() => this.api.auth.signOut.mutate());
  }

  /** Emails a reset link if the address has an account (the answer is the same either way). Not retried: it is rate limited. */
  async requestPasswordReset(email: string, options: { redirectTo?: string } = {}): Promise<void> {
    const input = { email, ...(options.redirectTo !== undefined ? { redirect_to: options.redirectTo } : {}) };
    await this.api.auth.requestPasswordReset.mutate(input).catch((error: unknown) => {
      throw toError(error);
    });
  }

  /** Sets a new password with the token of the emailed link; every session of the account ends. */
  async resetPassword(token: string, newPassword: string): Promise<void> {
    await this.api.auth.resetPassword.mutate({ token, new_password: newPassword }).catch((error: unknown) => {
      throw toError(error);
    });
  }

  /** The account: email, plan and its limits, credits left, jobs charged this month. */
  account(): Promise<Account> {
    return this.call(() => this.api.account.get.query());
  }

  private async sessionCall(run: (api: TRPCClient<AppRouter>) => Promise<Outputs["session"]>): Promise<Session> {
    let cookie: string | undefined;
    const api = this.createApi((response) => {
      const setCookie = response.headers.getSetCookie?.() ?? [];
      cookie = setCookie.find((value) => value.includes(".session_token="))?.split(";")[0] ?? cookie;
    });
    try {
      return { ...(await run(api)), cookie };
    } catch (error) {
      throw toError(error);
    }
  }

  /** What the server can do (no key needed): workflows, built-in instructions with examples, detectable objects, the generative provider. */
  capabilities(): Promise<Capabilities> {
    return this.call(() => this.api.service.capabilities.query());
  }

  // API keys and webhooks

  listKeys() {
    return this.call(async () => (await this.api.keys.list.query()).keys);
  }

  createKey(name: string) {
    return this.call(() => this.api.keys.create.mutate({ name }));
  }

  async revokeKey(id: string): Promise<void> {
    await this.call(() => this.api.keys.revoke.mutate({ id }));
  }

  /** `secret` keys X-Retouch-Signature; `standard_webhooks_secret` is the same key for Standard Webhooks verifiers. */
  webhookSecret() {
    return this.call(() => this.api.webhooks.secret.query());
  }

  webhookDeliveries(limit = 20) {
    return this.call(async () => (await this.api.webhooks.deliveries.query({ limit })).deliveries);
  }

  // Billing (where the server takes payments; else ApiError `payments_not_configured`)

  /** Plan, subscription, balance and allowance, packs and plans on sale with prices, purchase history. */
  billing(): Promise<BillingState> {
    return this.call(() => this.api.billing.state.query());
  }

  /** The checkout page's URL for a credit pack on sale (its credits): open it in a browser. */
  buyCredits(credits: number): Promise<{ url: string }> {
    return this.call(() => this.api.billing.checkout.mutate({ credits }));
  }

  /** The checkout page's URL for a plan: open it in a browser. A plan already held is changed in the portal. */
  subscribe(plan: PaidPlan): Promise<{ url: string }> {
    return this.call(() => this.api.billing.checkout.mutate({ plan }));
  }

  /** The customer portal's URL (card, plan change or cancellation, invoices). */
  billingPortal(): Promise<{ url: string }> {
    return this.call(() => this.api.billing.portal.mutate({}));
  }

  // Connected apps (MCP clients signed in with OAuth)

  /** The MCP clients the person approved, with what each may do and when it last got a token. */
  connectedApps(): Promise<ConnectedApp[]> {
    return this.call(async () => (await this.api.connectedApps.list.query()).apps);
  }

  /** Takes back an app's approval and every token it holds: its next request is refused. */
  async disconnectApp(clientId: string): Promise<void> {
    await this.call(() => this.api.connectedApps.revoke.mutate({ client_id: clientId }));
  }

  // Jobs

  /**
   * One page of your jobs, newest first; pass the page's `next_cursor` as
   * `cursor` for the next one, with the same filters.
   */
  jobs(options: JobFilters & { limit?: number; cursor?: string; signal?: AbortSignal } = {}): Promise<JobsPage> {
    const input = {
      ...(options.limit !== undefined ? { limit: options.limit } : {}),
      ...(options.cursor !== undefined ? { cursor: options.cursor } : {}),
      ...(options.status !== undefined ? { status: options.status } : {}),
      ...(options.workflow !== undefined ? { workflow: options.workflow } : {}),
      ...(options.from !== undefined ? { from: options.from } : {}),
      ...(options.to !== undefined ? { to: options.to } : {}),
    };
    return this.call(() => this.api.jobs.list.query(input, options.signal ? { signal: options.signal } : {}), options.signal);
  }

  /**
   * Every job, newest first, fetching pages as the loop goes:
   * `for await (const job of retouch.allJobs()) ...`. Jobs created while it
   * runs are not included (pages never shift).
   */
  async *allJobs(
    options: JobFilters & { pageSize?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<JobListing, void, undefined> {
    const { pageSize: _pageSize, signal: _signal, ...filters } = options;
    let cursor: string | undefined;
    do {
      const page = await this.jobs({
        ...filters,
        ...(options.pageSize !== undefined ? { limit: options.pageSize } : { limit: 100 }),
        ...(cursor !== undefined ? { cursor } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      yield* page.jobs;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  /**
   * Starts one job. An Idempotency-Key is sent (generated unless given), so
   * the automatic retries can never charge twice.
   */
  async submit(
    image: ImageInput,
    prompt: string,
    options: EditOptions & { idempotencyKey?: string; signal?: AbortSignal } = {},
  ): Promise<SingleSubmission> {
    const body = await toWireItem({ image, prompt, ...options }, this.fetchImpl, options.signal);
    const context: CallContext = { idempotencyKey: options.idempotencyKey ?? crypto.randomUUID() };
    return this.call(
      () =>
        this.api.process.submit.mutate(body, {
          context,
          ...(options.signal ? { signal: options.signal } : {}),
        }) as Promise<SingleSubmission>,
      options.signal,
    );
  }

  /** Starts a batch (1 to 50 images, at most your plan's concurrency); items that cannot start are listed with their error. */
  async submitBatch(
    items: BatchItem[],
    options: { idempotencyKey?: string; signal?: AbortSignal } = {},
  ): Promise<BatchSubmission> {
    const images = await Promise.all(items.map((item) => toWireItem(item, this.fetchImpl, options.signal)));
    const context: CallContext = { idempotencyKey: options.idempotencyKey ?? crypto.randomUUID() };
    return this.call(
      () =>
        this.api.process.submit.mutate(
          { images },
          { context, ...(options.signal ? { signal: options.signal } : {}) },
        ) as Promise<BatchSubmission>,
      options.signal,
    );
  }

  status(jobId: string, signal?: AbortSignal): Promise<JobStatus> {
    return this.call(
      () => this.api.process.status.query({ job_id: jobId }, signal ? { signal } : {}) as Promise<JobStatus>,
      signal,
    );
  }

  batchStatus(batchId: string, signal?: AbortSignal): Promise<BatchStatus> {
    return this.call(
      () => this.api.process.status.query({ batch_id: batchId }, signal ? { signal } : {}) as Promise<BatchStatus>,
      signal,
    );
  }

  /** The signed link and metadata of a done job; `undefined` while it is pending; JobFailedError (`job_failed`) if it failed. */
  async result(jobId: string, signal?: AbortSignal): Promise<JobResult | undefined> {
    try {
      const result = await this.call(() => this.api.process.result.query({ job_id: jobId }, signal ? { signal } : {}), signal);
      return "url" in result ? result : undefined;
    } catch (error) {
      if (error instanceof ApiError && error.failure) throw new JobFailedError(jobId, error.failure);
      throw error;
    }
  }

  /**
   * Waits until the job is done or failed and returns its final status (with
   * the metadata block): from the progress stream, or by polling when the
   * stream is refused or cut. `onProgress` sees each new status.
   */
  waitForJob(jobId: string, options: WaitOptions<JobStatus> = {}): Promise<JobStatus> {
    return this.waitFor(
      { query: `job_id=${encodeURIComponent(jobId)}`, what: `Job ${jobId}` },
      (status) => status.status !== "pending",
      (signal) => this.status(jobId, signal),
      options,
    );
  }

  /**
   * Waits until every job of the batch is done or failed and returns the
   * batch's final status, as `waitForJob` does for one job (stream first,
   * polling as the fallback); `onProgress` sees the batch's status at each
   * change. The one wait for a batch: the CLI and the dashboard use it.
   */
  waitForBatch(batchId: string, options: WaitOptions<BatchStatus> = {}): Promise<BatchStatus> {
    return this.waitFor(
      { query: `batch_id=${encodeURIComponent(batchId)}`, what: `Batch ${batchId}` },
      (status) => status.jobs.every((job) => job.status !== "pending"),
      (signal) => this.batchStatus(batchId, signal),
      options,
    );
  }

  /** The one implementation of waiting: the progress stream, then polling from where it stopped. */
  private async waitFor<S>(
    target: { query: string; what: string },
    isTerminal: (status: S) => boolean,
    poll: (signal: AbortSignal) => Promise<S>,
    options: WaitOptions<S>,
  ): Promise<S> {
    const timeoutMs = options.timeoutMs ?? 600_000;
    const interval = Math.max(250, options.intervalMs ?? 2000);
    const deadline = Date.now() + timeoutMs;
    const timedOut = () => new TimeoutError(`${target.what} was still pending after ${timeoutMs} ms.`);
    const expiry = new AbortController();
    const timer = setTimeout(() => expiry.abort(), timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, expiry.signal]) : expiry.signal;
    let reported: string | undefined;
    const report = (status: S) => {
      const text = JSON.stringify(status);
      if (text === reported) return;
      reported = text;
      options.onProgress?.(status);
    };
    const read = options.poll ?? poll;
    try {
      if (options.stream !== false) {
        const final = await this.followStream(target.query, isTerminal, report, signal).catch((error: unknown) => {
          throw expiry.signal.aborted && !options.signal?.aborted ? timedOut() : error;
        });
        if (final !== undefined) return final;
      }
      for (;;) {
        if (options.signal?.aborted) throw new AbortedError();
        if (expiry.signal.aborted) throw timedOut();
        const status = await read(signal).catch((error: unknown) => {
          throw expiry.signal.aborted && !options.signal?.aborted ? timedOut() : error;
        });
        report(status);
        if (isTerminal(status)) return status;
        if (Date.now() + interval > deadline) throw timedOut();
        await sleep(interval, signal).catch((error: unknown) => {
          throw expiry.signal.aborted && !options.signal?.aborted ? timedOut() : error;
        });
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Reads the progress stream until a terminal status, which it returns;
   * undefined when the stream is refused (an older server, the account's
   * streams all open, no credentials) or cut before the end: the caller then
   * polls, and the status endpoint says anything that is wrong. Sent with the
   * key, or the session cookie; in a browser the page's own cookie goes along.
   */
  private async followStream<S>(
    query: string,
    isTerminal: (status: S) => boolean,
    report: (status: S) => void,
    signal: AbortSignal,
  ): Promise<S | undefined> {
    const { apiKey, sessionCookie } = this.options;
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    else if (sessionCookie) headers.cookie = sessionCookie;
    try {
      const response = await this.fetchImpl(`${this.baseUrl}/api/process/events?${query}`, { headers, signal });
      if (!response.ok || !response.body || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
        await response.body?.cancel().catch(() => {});
        return undefined;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return undefined;
          buffer += value.replace(/\r\n?/g, "\n");
          for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const lines = block.split("\n");
            const data = lines.filter((line) => line.startsWith("data:")).map((line) => line.slice(5).replace(/^ /, ""));
            const event =
              lines
                .find((line) => line.startsWith("event:"))
                ?.slice(6)
                .trim() ?? "message";
            if (event !== "status" || data.length === 0) continue;
            const status = JSON.parse(data.join("\n")) as S;
            report(status);
            if (isTerminal(status)) return status;
          }
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
    } catch (error) {
      if (signal.aborted) throw error instanceof AbortedError ? error : new AbortedError(undefined, { cause: error });
      // Cut mid-way (or never reached): polling takes over.
      return undefined;
    }
  }

  /**
   * Submits, waits (the progress stream, or polling; `onProgress` sees each
   * status), and returns the result with a `download()`: the one call most
   * applications need. A failed job throws JobFailedError (`code` is
   * `job_failed`, `errorCode` says why; its credit was refunded).
   */
  async edit(
    image: ImageInput,
    prompt: string,
    options: EditOptions & WaitOptions<JobStatus> & { idempotencyKey?: string } = {},
  ) {
    const { job_id: jobId } = await this.submit(image, prompt, options);
    const status = await this.waitForJob(jobId, options);
    if (status.status === "error") throw JobFailedError.fromStatus(jobId, status);
    const result = await this.result(jobId, options.signal);
    if (!result) throw new LocalError(`Job ${jobId} is done but has no result.`);
    return { ...result, download: (signal?: AbortSignal) => this.download(result.url, signal) };
  }

  /** The image bytes behind a signed result link (no credentials needed). */
  async download(url: string, signal?: AbortSignal): Promise<Uint8Array> {
    let response: Response;
    try {
      response = await this.fetchImpl(url, signal ? { signal } : {});
    } catch (error) {
      if (signal?.aborted) throw new AbortedError(undefined, { cause: error });
      throw new NetworkError(`The result could not be downloaded: ${(error as Error).message}`, { cause: error });
    }
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as { code?: ErrorCode; message?: string };
      throw new ApiError({
        code: body.code ?? "not_found",
        status: response.status,
        message: body.message ?? `The download answered ${response.status}.`,
      });
    }
    return new Uint8Array(await response.arrayBuffer());
  }
}
