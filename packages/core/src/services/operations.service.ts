import type { BlobStore } from "../blobs/blob-store";
import type { Config } from "../config/env";
import { RetouchError } from "../errors/retouch-error";
import type { Logger } from "../lib/logger";
import type { RetouchMetrics } from "../lib/metrics";
import { constantTimeEqual, sha256Hex } from "../lib/secrets";
import type { OperationsStore } from "../stores/operations.store";

/**
 * How long one readiness check may take. A database behind a dropped route
 * would otherwise hold the probe for the pool's 10 s connection timeout; an
 * orchestrator's probe gives up sooner than that and learns nothing.
 */
export const READY_CHECK_TIMEOUT_MS = 2_000;

export type CheckState = "ok" | "unreachable";

export interface Readiness {
  ready: boolean;
  checks: { database: CheckState; store: CheckState };
}

export interface OperationsDependencies {
  store: OperationsStore;
  /** Its `check()`: the bucket answers (S3), or the directory is writable (files). */
  blobs: BlobStore;
  config: Pick<Config, "metricsToken">;
  logger: Logger;
  metrics: RetouchMetrics;
}

function withTimeout(work: Promise<void>, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${READY_CHECK_TIMEOUT_MS} ms`)),
      READY_CHECK_TIMEOUT_MS,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Operators' endpoints on every role that listens: readiness (the database
 * and the blob store answer) and the Prometheus scrape, behind
 * RETOUCH_METRICS_TOKEN.
 */
export class OperationsService {
  /** The last readiness answer per check, so a failing probe is logged once per change, not every 10 s. */
  private readonly lastState = new Map<string, CheckState>();

  constructor(private readonly deps: OperationsDependencies) {}

  get metrics(): RetouchMetrics {
    return this.deps.metrics;
  }

  /** Both checks at once, each bounded by READY_CHECK_TIMEOUT_MS; the reasons go to the log, never to the caller. */
  async readiness(): Promise<Readiness> {
    const [database, store] = await Promise.all([
      this.check("database", () => this.deps.store.ping()),
      this.check("store", () => this.deps.blobs.check()),
    ]);
    return { ready: database === "ok" && store === "ok", checks: { database, store } };
  }

  private async check(name: string, run: () => Promise<void>): Promise<CheckState> {
    let state: CheckState = "ok";
    let reason: string | undefined;
    try {
      await withTimeout(run(), name);
    } catch (error) {
      state = "unreachable";
      reason = error instanceof Error ? error.message : String(error);
    }
    const previous = this.lastState.get(name);
    if (previous !== state) {
      this.lastState.set(name, state);
      if (state === "unreachable") this.deps.logger.warn({ check: name, reason }, "readiness: not ready");
      else if (previous === "unreachable") this.deps.logger.info({ check: name }, "readiness: reachable again");
    }
    return state;
  }

  /**
   * Whether a bearer `token` may read /metrics. Without RETOUCH_METRICS_TOKEN
   * the endpoint is not exposed at all (404): "loopback only" would not be a
   * boundary behind a reverse proxy on the same machine, where every request
   * comes from 127.0.0.1. The token is compared as SHA-256 digests, so the
   * comparison takes the same time whatever is sent, its length included.
   */
  authorizeScrape(token: string | undefined): void {
    const expected = this.deps.config.metricsToken;
    if (expected === undefined) {
      // The same answer as a path that was never mounted: nothing says the endpoint exists.
      throw new RetouchError("not_found", "No route for GET /metrics.");
    }
    if (token === undefined) {
      throw new RetouchError("unauthorized", "Send the metrics token: `Authorization: Bearer <RETOUCH_METRICS_TOKEN>`.");
    }
    // 401 for a wrong token too, as RFC 6750 has it (invalid_token); 403 is for a valid token lacking a scope.
    if (!constantTimeEqual(sha256Hex(token), sha256Hex(expected))) {
      throw new RetouchError("unauthorized", "The metrics token is wrong: send the one in RETOUCH_METRICS_TOKEN.");
    }
  }
}
