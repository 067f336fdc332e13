import { sniffImageFormat } from "@retouch/engine";
import type { Config } from "../config/env";
import { RetouchError } from "../errors/retouch-error";
import { base64DecodedLength, decodeBase64Strict } from "../lib/base64";
import { BoundedSemaphore, KeyedSemaphores, SlotUnavailableError } from "../lib/bounded-semaphore";
import type { Logger } from "../lib/logger";
import { fetchBytes, OutboundFetchError, OutboundRefusedError } from "../lib/outbound-http";

/** Redirects followed when fetching an `image_url`, each re-checked. */
export const MAX_IMAGE_REDIRECTS = 3;
/** `image_url`s of one request fetched at the same time (never more than the account's cap). */
export const IMAGE_FETCH_CONCURRENCY = 4;
/**
 * Downloads that may wait for a slot, as a multiple of the slots: enough for a
 * few parallel batches to queue behind each other, few enough that a flood is
 * refused at once instead of lining up (each waiting request holds what it
 * already fetched).
 */
const WAITING_PER_SLOT = 4;

const DATA_URL = /^data:image\/[a-z0-9.+-]+(?:;[^,;]*)*;base64,$/i;
/** A `data:` prefix is short; looking further for its comma would scan megabytes of base64. */
const DATA_URL_MAX_PREFIX = 100;

/**
 * A failure that sinks the whole request rather than one batch item: the
 * fetched host failing (502, so that a retry with the same Idempotency-Key can
 * succeed once it recovers) or the request's fetched bytes over its budget.
 */
export class RequestLevelError extends RetouchError {}

/** One request's downloads: a shared byte budget, and one signal that stops them all once one sinks the request. */
export interface FetchSession {
  /** Whose request it is: the per-account cap counts its downloads. */
  account: string;
  remainingBytes: number;
  controller: AbortController;
}

export interface ImageInputsDependencies {
  config: Pick<
    Config,
    | "maxImageBytes"
    | "maxRequestBytes"
    | "webhookAllowInsecure"
    | "imageFetchTimeoutMs"
    | "imageFetchesInFlight"
    | "imageFetchesPerAccount"
    | "imageFetchQueueWaitMs"
  >;
  logger: Logger;
  /** For tests: how hosts resolve. */
  resolveHost?: (host: string) => Promise<string[]>;
}

/** Turns a process item's `image` / `image_url` (and mask) into bytes, or into an error the client can act on. */
export class ImageInputsService {
  /** Downloads open in this process, all accounts together. */
  private readonly slots: BoundedSemaphore;
  /** Downloads open per account, so one account's parallel requests cannot take every slot. */
  private readonly accountSlots: KeyedSemaphores;

  constructor(private readonly deps: ImageInputsDependencies) {
    const { imageFetchesInFlight, imageFetchesPerAccount, imageFetchQueueWaitMs } = deps.config;
    this.slots = new BoundedSemaphore({
      limit: imageFetchesInFlight,
      maxWaiting: imageFetchesInFlight * WAITING_PER_SLOT,
      maxWaitMs: imageFetchQueueWaitMs,
    });
    this.accountSlots = new KeyedSemaphores({
      limit: imageFetchesPerAccount,
      maxWaiting: imageFetchesPerAccount * WAITING_PER_SLOT,
      maxWaitMs: imageFetchQueueWaitMs,
    });
  }

  /** Downloads of `accountId` waiting for a slot of the account's now (they have not reached the host yet). */
  downloadsWaiting(accountId: string): number {
    return this.accountSlots.waitingFor(accountId);
  }

  /** How many of one request's downloads run at once: never more than its account may open. */
  get requestConcurrency(): number {
    return Math.min(IMAGE_FETCH_CONCURRENCY, this.deps.config.imageFetchesPerAccount);
  }

  newSession(account: string): FetchSession {
    return { account, remainingBytes: this.deps.config.maxRequestBytes, controller: new AbortController() };
  }

  /** Base64 (either alphabet, optional `data:image/...;base64,` prefix), decoded once: 400 if it is not base64, 413 if too large. */
  decodeBase64(text: string, field: string): Buffer {
    let body = text;
    if (text.startsWith("data:")) {
      const comma = text.indexOf(",", 0);
      if (comma < 0 || comma > DATA_URL_MAX_PREFIX || !DATA_URL.test(text.slice(0, comma + 1))) {
        throw new RetouchError("invalid_request", `${field}: a data: URL must start with data:image/<type>;base64,`);
      }
      body = text.slice(comma + 1);
    }
    const size = base64DecodedLength(body);
    if (size === undefined) throw new RetouchError("invalid_request", `${field}: is not valid base64`);
    // Refused before decoding: the length of the text tells the size.
    if (size > this.deps.config.maxImageBytes) {
      throw new RetouchError(
        "payload_too_large",
        `${field}: the decoded image is ${size} bytes; the limit is ${this.deps.config.maxImageBytes}`,
      );
    }
    if (size === 0) throw new RetouchError("invalid_request", `${field}: is empty`);
    const bytes = decodeBase64Strict(body);
    if (!bytes)
      throw new RetouchError("invalid_request", `${field}: is not valid base64 (only A-Z, a-z, 0-9, +/ or -_, and = at the end)`);
    return bytes;
  }

  /**
   * Downloads an `image_url` under the webhook address rules. The client's
   * mistakes (a refused address, a 4xx, a non-image, too large) are 400/413
   * for this item; the host's failures (unreachable, 5xx, too slow) are a
   * RequestLevelError 502.
   */
  async fetch(url: string, field: string, session: FetchSession): Promise<Buffer> {
    const host = hostOf(url);
    const release = await this.takeSlots(session);
    try {
      return await this.download(url, field, host, session);
    } catch (error) {
      // The client picked the URL: its failures are the client's, a warning without a stack (never the URL: it may carry a token).
      if (error instanceof RetouchError) {
        this.deps.logger.warn(
          { account: session.account, field, host, code: error.code, reason: error.message },
          "image fetch failed",
        );
      }
      throw error;
    } finally {
      release();
    }
  }

  /**
   * A slot under the account's cap, then under the process's (in that order,
   * so a request waiting on its own account holds no global slot). Either
   * queue full or a wait past the limit sinks the request: 503 with Retry-After.
   */
  private async takeSlots(session: FetchSession): Promise<() => void> {
    const { signal } = session.controller;
    let releaseAccount: (() => void) | undefined;
    try {
      releaseAccount = await this.accountSlots.acquire(session.account, signal);
      const releaseGlobal = await this.slots.acquire(signal);
      const account = releaseAccount;
      return () => {
        releaseGlobal();
        account();
      };
    } catch (error) {
      releaseAccount?.();
      if (!(error instanceof SlotUnavailableError)) throw error;
      const scope = releaseAccount ? "this server" : "your account";
      const retryAfterSeconds = Math.max(1, Math.ceil(this.deps.config.imageFetchQueueWaitMs / 1000));
      if (error.reason !== "aborted") {
        this.deps.logger.warn({ account: session.account, scope, reason: error.reason }, "image fetch refused: too many at once");
      }
      throw new RequestLevelError(
        "service_unavailable",
        `Too many image_url downloads are running for ${scope}; nothing was charged. Retry after ${retryAfterSeconds} s (with the same Idempotency-Key).`,
        { retryAfterSeconds },
      );
    }
  }

  private async download(url: string, field: string, host: string, session: FetchSession): Promise<Buffer> {
    const { config } = this.deps;
    try {
      return await fetchBytes(url, {
        allowInsecure: config.webhookAllowInsecure,
        timeoutMs: config.imageFetchTimeoutMs,
        maxBytes: config.maxImageBytes,
        maxRedirects: MAX_IMAGE_REDIRECTS,
        headers: { Accept: "image/jpeg, image/png, image/webp", "User-Agent": "Retouch-ImageFetch/1.0" },
        checkHead: (head) => {
          if (!sniffImageFormat(head)) {
            throw new RetouchError("invalid_request", `${field}: ${host} did not answer with a JPEG, PNG or WebP image`);
          }
        },
        onBytes: (count) => {
          session.remainingBytes -= count;
          if (session.remainingBytes < 0) {
            throw new RequestLevelError(
              "payload_too_large",
              `The images fetched for this request exceed ${config.maxRequestBytes} bytes in all; send fewer per request.`,
            );
          }
        },
        signal: session.controller.signal,
        ...(this.deps.resolveHost ? { resolve: this.deps.resolveHost } : {}),
      });
    } catch (error) {
      if (error instanceof RetouchError) throw error;
      if (error instanceof OutboundRefusedError) throw new RetouchError("invalid_request", `${field}: ${error.message}`);
      if (!(error instanceof OutboundFetchError)) throw error;
      if (error.failure === "too_large") throw new RetouchError("payload_too_large", `${field}: ${error.message}`);
      if (error.failure === "unreachable" || (error.failure === "status" && isHostTrouble(error.status))) {
        throw new RequestLevelError(
          "image_fetch_failed",
          `${field}: ${host} could not serve the image (${error.message}); nothing was charged. Retry with the same Idempotency-Key.`,
        );
      }
      throw new RetouchError("invalid_request", `${field}: ${host}: ${error.message}`);
    }
  }
}

/** 5xx, and the 4xx answers that mean "not now" rather than "not this". */
function isHostTrouble(status: number | undefined): boolean {
  return status !== undefined && (status >= 500 || status === 408 || status === 429);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "the host";
  }
}
