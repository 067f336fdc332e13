import { EngineError, embeddingBytes, type ImageEmbedding, type PointSelector } from "@retouch/engine";
import type { Config } from "../config/env";
import { RetouchError } from "../errors/retouch-error";
import { BoundedSemaphore, SlotUnavailableError } from "../lib/bounded-semaphore";
import { newId } from "../lib/ids";
import type { Logger } from "../lib/logger";
import type {
  RefineSelectionInput,
  RefineSelectionOutput,
  SelectionStatusOutput,
  StartSelectionInput,
  StartSelectionOutput,
} from "../schemas/selections.schemas";
import type { RateLimitsStore } from "../stores/rate-limits.store";
import { ImageInputsService } from "./image-inputs.service";
import type { Principal } from "./principal";

/** Where the segmenter runs: the engine pool of this process (undefined: none, or switched off). */
export interface SelectionEngine {
  pointSelector(): PointSelector | undefined;
}

/**
 * An account's encoded pictures kept at once: a second tab or a new picture
 * needs no wait, and no account can fill the cache for everyone else.
 */
const SELECTIONS_PER_ACCOUNT = 2;
/**
 * Encodes at once in this process; more wait (the inference thread runs one
 * pass at a time anyway), and a full queue answers 503 at once.
 */
const ENCODES_AT_ONCE = 2;
const ENCODES_WAITING = 8;

interface Entry {
  userId: string;
  embedding: ImageEmbedding;
  bytes: number;
  expiresAt: number;
}

/**
 * Click-to-select for the dashboard's playground: a picture is encoded once
 * (about a second), kept here a few minutes, and each click runs only the
 * segmenter's decoder on it. Free (no credit, no job), so it is for a
 * signed-in person's session only and rate limited per account; the client
 * keeps the points and sends them all with each click, so the only state is
 * this bounded cache of embeddings, which a restart simply empties (the
 * client then starts again).
 */
export class SelectionsService {
  private engine: SelectionEngine | undefined;
  /** In least-recently-used order: Map keeps insertion order, and a use re-inserts. */
  private readonly cache = new Map<string, Entry>();
  private cachedBytes = 0;
  private readonly encodes: BoundedSemaphore;
  private readonly images: ImageInputsService;

  constructor(
    private readonly deps: {
      config: Pick<
        Config,
        | "selection"
        | "objectSegmenter"
        | "maxImageBytes"
        | "maxRequestBytes"
        | "webhookAllowInsecure"
        | "imageFetchTimeoutMs"
        | "imageFetchesInFlight"
        | "imageFetchesPerAccount"
        | "imageFetchQueueWaitMs"
      >;
      rateLimits: RateLimitsStore;
      logger: Logger;
    },
  ) {
    this.images = new ImageInputsService({ config: deps.config, logger: deps.logger });
    this.encodes = new BoundedSemaphore({
      limit: ENCODES_AT_ONCE,
      maxWaiting: ENCODES_WAITING,
      maxWaitMs: deps.config.selection.timeoutMs,
    });
  }

  /** The host hands over the engine pool once it has started one (the services are made before it). */
  useEngine(engine: SelectionEngine | undefined): void {
    this.engine = engine;
    if (!engine) this.clear();
  }

  status(): SelectionStatusOutput {
    const reason = this.unavailableReason();
    return { available: reason === undefined, reason: reason ?? null };
  }

  async start(principal: Principal, input: StartSelectionInput): Promise<StartSelectionOutput> {
    const selector = this.selectorFor(principal);
    await this.limit(principal, "start");
    const bytes = this.images.decodeBase64(input.image, "image");
    const release = await this.encodeSlot();
    let embedding: ImageEmbedding;
    try {
      embedding = await this.withTimeout((signal) => selector.embed(bytes, signal), "encoding the picture");
    } catch (error) {
      throw this.refusal(error, principal, "image");
    } finally {
      release();
    }
    const id = newId("sel");
    const expiresAt = Date.now() + this.deps.config.selection.ttlMs;
    this.remember(id, { userId: principal.userId, embedding, bytes: embeddingBytes(embedding), expiresAt });
    return { selection_id: id, width: embedding.width, height: embedding.height, expires_at: new Date(expiresAt).toISOString() };
  }

  async refine(principal: Principal, input: RefineSelectionInput): Promise<RefineSelectionOutput> {
    const selector = this.selectorFor(principal);
    await this.limit(principal, "refine");
    const entry = this.recall(input.selection_id, principal.userId);
    try {
      const selection = await this.withTimeout(
        (signal) => selector.select(entry.embedding, input.points, signal),
        "selecting the object",
      );
      return {
        mask: selection.png.toString("base64"),
        mask_width: selection.width,
        mask_height: selection.height,
        predicted_iou: selection.predictedIou,
        coverage: selection.coverage,
      };
    } catch (error) {
      throw this.refusal(error, principal, "points");
    }
  }

  /** Forgets every encoded picture (the engine went away). */
  clear(): void {
    this.cache.clear();
    this.cachedBytes = 0;
  }

  private unavailableReason(): string | undefined {
    if (this.deps.config.objectSegmenter === "none") {
      return "Selecting by clicking needs the promptable segmenter, which this server has switched off (RETOUCH_OBJECT_SEGMENTER=none). Paint the mask instead.";
    }
    if (!this.engine?.pointSelector()) {
      return "Selecting by clicking is not available on this server (its segmenter model is not installed). Paint the mask instead.";
    }
    return undefined;
  }

  private selectorFor(principal: Principal): PointSelector {
    // Free work is for a person in the dashboard; scripts pay per edit with a key.
    if (principal.via !== "session") {
      throw new RetouchError(
        "unauthorized",
        "Selecting by clicking is part of the dashboard's playground and works with its sign-in session only, not with an API key. Send a `mask` with your edit instead.",
      );
    }
    const reason = this.unavailableReason();
    const selector = this.engine?.pointSelector();
    if (reason || !selector) throw new RetouchError("unsupported_instruction", reason);
    return selector;
  }

  private async limit(principal: Principal, kind: "start" | "refine"): Promise<void> {
    const { count, windowMs } =
      kind === "start" ? this.deps.config.selection.startRateLimit : this.deps.config.selection.refineRateLimit;
    const decision = await this.deps.rateLimits.hit(`selection-${kind}:${principal.userId}`, { limit: count, windowMs });
    if (decision.allowed) return;
    const what = kind === "start" ? `${count} pictures` : `${count} clicks`;
    this.deps.logger.warn(
      { userId: principal.userId, kind, retryAfterSeconds: decision.retryAfterSeconds },
      "selection rate limited",
    );
    throw new RetouchError(
      "rate_limited",
      `Selecting by clicking allows ${what} per ${Math.round(windowMs / 1000)} s; retry after ${decision.retryAfterSeconds} s.`,
      { retryAfterSeconds: decision.retryAfterSeconds },
    );
  }

  private async encodeSlot(): Promise<() => void> {
    try {
      return await this.encodes.acquire();
    } catch (error) {
      if (!(error instanceof SlotUnavailableError)) throw error;
      const retryAfterSeconds = Math.max(1, Math.ceil(this.deps.config.selection.timeoutMs / 1000));
      this.deps.logger.warn({ reason: error.reason }, "selection refused: too many pictures being encoded");
      throw new RetouchError(
        "service_unavailable",
        `Too many pictures are being prepared for selection on this server; retry after ${retryAfterSeconds} s.`,
        { retryAfterSeconds },
      );
    }
  }

  /** The segmenter's work, given up after the configured time (its pass is cancelled) with a 503. */
  private async withTimeout<T>(work: (signal: AbortSignal) => Promise<T>, what: string): Promise<T> {
    const controller = new AbortController();
    const { timeoutMs } = this.deps.config.selection;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        const retryAfterSeconds = Math.max(1, Math.ceil(timeoutMs / 1000));
        reject(
          new RetouchError(
            "service_unavailable",
            `The server is busy: ${what} took longer than ${Math.round(timeoutMs / 1000)} s. Retry after ${retryAfterSeconds} s.`,
            { retryAfterSeconds },
          ),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([work(controller.signal), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The client's mistakes as 4xx (a warning, no stack); the segmenter's own failure as 503. */
  private refusal(error: unknown, principal: Principal, field: string): unknown {
    if (!(error instanceof EngineError)) return error;
    if (error.reason === "unsupported_image" || error.reason === "image_too_large" || error.reason === "invalid_request") {
      this.deps.logger.warn({ userId: principal.userId, reason: error.reason, detail: error.message }, "selection refused");
      return new RetouchError("invalid_request", `${field}: ${error.message}`);
    }
    if (error.reason === "cancelled") return error;
    this.deps.logger.error({ err: error, userId: principal.userId }, "the segmenter failed during a selection");
    return new RetouchError("service_unavailable", "The segmenter failed on this picture; retry in a few seconds.", {
      retryAfterSeconds: 5,
    });
  }

  private remember(id: string, entry: Entry): void {
    this.dropExpired();
    const own = [...this.cache].filter(([, held]) => held.userId === entry.userId);
    for (const [oldId] of own.slice(0, Math.max(0, own.length - SELECTIONS_PER_ACCOUNT + 1))) this.forget(oldId);
    this.cache.set(id, entry);
    this.cachedBytes += entry.bytes;
    const { cacheEntries, cacheBytes } = this.deps.config.selection;
    for (const oldId of this.cache.keys()) {
      if (this.cache.size <= cacheEntries && this.cachedBytes <= cacheBytes) break;
      if (oldId !== id) this.forget(oldId);
    }
  }

  /** Another account's selection answers as an unknown one: ids are never confirmed to others. */
  private recall(id: string, userId: string): Entry {
    this.dropExpired();
    const entry = this.cache.get(id);
    if (!entry || entry.userId !== userId) {
      throw new RetouchError(
        "not_found",
        "This selection has expired or does not exist (pictures are kept a few minutes after the last click): choose the picture again to start a new selection.",
      );
    }
    // A use makes it the most recent, and keeps it longer.
    this.cache.delete(id);
    entry.expiresAt = Date.now() + this.deps.config.selection.ttlMs;
    this.cache.set(id, entry);
    return entry;
  }

  private dropExpired(): void {
    const now = Date.now();
    for (const [id, entry] of this.cache) if (entry.expiresAt <= now) this.forget(id);
  }

  private forget(id: string): void {
    const entry = this.cache.get(id);
    if (!entry) return;
    this.cache.delete(id);
    this.cachedBytes -= entry.bytes;
  }
}
