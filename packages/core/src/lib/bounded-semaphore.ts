/** Why `BoundedSemaphore.acquire` gave up: the queue was full, the wait ran out, or the caller aborted. */
export class SlotUnavailableError extends Error {
  constructor(readonly reason: "queue_full" | "wait_expired" | "aborted") {
    super(`no free slot (${reason})`);
    this.name = "SlotUnavailableError";
  }
}

interface Waiter {
  grant: () => void;
  fail: (reason: SlotUnavailableError["reason"]) => void;
}

/**
 * At most `limit` holders at once; at most `maxWaiting` callers waiting, each
 * for at most `maxWaitMs`. The queue is bounded in length and in time so that
 * overload turns into a prompt refusal rather than an ever-longer line of
 * requests, each holding memory. Waiters are served first come, first served.
 *
 * Kept rather than a library (p-limit, p-queue): they queue without a bound on
 * the line's length and give a waiter no time limit (overload would wait, not
 * be refused with a 503), their slot lives only as long as one function call
 * (image-inputs holds its account's slot while it waits for the server's), and
 * KeyedSemaphores below adds per-account fairness on top. p-map does the
 * plain "map at most n at once" (submissions, blob migration).
 */
export class BoundedSemaphore {
  private held = 0;
  private readonly waiting: Waiter[] = [];

  constructor(private readonly options: { limit: number; maxWaiting: number; maxWaitMs: number }) {}

  /** True when nobody holds or waits: a keyed pool may forget it. */
  get idle(): boolean {
    return this.held === 0 && this.waiting.length === 0;
  }

  /** Callers waiting for a slot now. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** A slot, or SlotUnavailableError; call the returned function exactly once to give the slot back. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) throw new SlotUnavailableError("aborted");
    if (this.held < this.options.limit && this.waiting.length === 0) {
      this.held++;
      return this.releaser();
    }
    if (this.waiting.length >= this.options.maxWaiting) throw new SlotUnavailableError("queue_full");
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        fail: (reason) => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          const index = this.waiting.indexOf(waiter);
          if (index >= 0) this.waiting.splice(index, 1);
          reject(new SlotUnavailableError(reason));
        },
      };
      const timer = setTimeout(() => waiter.fail("wait_expired"), this.options.maxWaitMs);
      const onAbort = () => waiter.fail("aborted");
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
    // The slot was handed over by a release: `held` already counts it.
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // Handing the slot straight to the next waiter keeps `held` unchanged, and no newcomer can jump the line.
      if (next) next.grant();
      else this.held--;
    };
  }
}

/** One BoundedSemaphore per key (an account), made on first use and forgotten once idle, so the map never grows without bound. */
export class KeyedSemaphores {
  private readonly byKey = new Map<string, BoundedSemaphore>();

  constructor(private readonly options: { limit: number; maxWaiting: number; maxWaitMs: number }) {}

  async acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    let semaphore = this.byKey.get(key);
    if (!semaphore) {
      semaphore = new BoundedSemaphore(this.options);
      this.byKey.set(key, semaphore);
    }
    const owner = semaphore;
    try {
      const release = await owner.acquire(signal);
      return () => {
        release();
        this.forgetIfIdle(key, owner);
      };
    } catch (error) {
      this.forgetIfIdle(key, owner);
      throw error;
    }
  }

  /** Callers waiting for one of `key`'s slots now. */
  waitingFor(key: string): number {
    return this.byKey.get(key)?.waitingCount ?? 0;
  }

  private forgetIfIdle(key: string, semaphore: BoundedSemaphore): void {
    if (semaphore.idle && this.byKey.get(key) === semaphore) this.byKey.delete(key);
  }
}
