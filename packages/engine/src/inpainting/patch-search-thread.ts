import { Worker } from "node:worker_threads";
import { workerScript } from "../runtime/worker-script";
import type { Band, SearchField, SearchLevel } from "./patch-search";

/** A band for the helper: the level and the field live in shared memory, so nothing of them is copied. */
export interface PatchSearchTask {
  level: SearchLevel;
  field: SearchField;
  radius: number;
  band: Band;
}
/** What the fill's thread sends: a band, or word that its fill is done with the arrays it shared. */
export type PatchSearchMessage = PatchSearchTask | { release: true };
export type PatchSearchReply = { ok: true } | { ok: false; message: string };

const script = workerScript("patch-search.worker", import.meta.url);

/**
 * The fill's helper thread: it searches the second band of each large round
 * while the fill's own thread searches the first, so a fill uses both cores
 * where it used one (the detector and the segmenter are done by then).
 *
 * One per thread that fills, started by its first fill and kept: idle, it
 * holds its code and a few MB, never a picture (the fill's arrays are shared
 * with it, not copied). Whether it ran a band or the fill's thread ran both
 * never changes the fill (patch-search.ts says how), so a fill whose helper is
 * not up yet, is busy with another fill or has failed searches in its own
 * thread, and a test can compare the two.
 */
export class PatchSearchThread {
  private worker: Worker | undefined;
  private online: Promise<void> | undefined;
  private ready = false;
  private waiting: ((reply: PatchSearchReply) => void) | undefined;
  private startCount = 0;
  private bandCount = 0;

  /** How many times the thread was started and how many bands it searched (tests, the bench). */
  get stats(): { starts: number; bands: number } {
    return { starts: this.startCount, bands: this.bandCount };
  }

  /** Starts the thread unless it is up; resolves when it can take a band. */
  start(): Promise<void> {
    if (this.online) return this.online;
    const worker = new Worker(script.url, { execArgv: script.execArgv });
    // Idle, it must not keep the process alive; while it searches, it is referenced (search).
    worker.unref();
    this.startCount++;
    this.worker = worker;
    this.online = new Promise((resolve) => {
      worker.once("online", () => {
        this.ready = true;
        resolve();
      });
      const gone = (message: string) => {
        if (this.worker !== worker) return;
        this.worker = undefined;
        this.online = undefined;
        this.ready = false;
        resolve();
        this.answer({ ok: false, message });
      };
      worker.once("error", (error) => gone(`the fill's helper thread failed (${error.message})`));
      worker.once("exit", (code) => gone(`the fill's helper thread exited (code ${code})`));
    });
    worker.on("message", (reply: PatchSearchReply) => {
      if (reply.ok) this.bandCount++;
      this.answer(reply);
    });
    return this.online;
  }

  /** Searches the band in the thread; undefined when it is not up or busy, and the caller searches it itself. */
  search(task: PatchSearchTask): Promise<PatchSearchReply> | undefined {
    const worker = this.worker;
    if (!worker || !this.ready || this.waiting) return undefined;
    worker.ref();
    return new Promise((resolve) => {
      this.waiting = resolve;
      worker.postMessage(task satisfies PatchSearchMessage);
    });
  }

  /**
   * A fill that handed bands to the thread is done: the thread lets go of its arrays. Without it, the thread
   * held every fill's (the 12 MP memory bench at concurrency 2: 1053 MiB at the peak and 708 MiB idle, against
   * 966 and 551 MiB without the helper).
   */
  release(): void {
    this.worker?.postMessage({ release: true } satisfies PatchSearchMessage);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.online = undefined;
    this.ready = false;
    this.answer({ ok: false, message: "the fill's helper thread was closed" });
    await worker?.terminate();
  }

  private answer(reply: PatchSearchReply): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    this.worker?.unref();
    waiting?.(reply);
  }
}

/** This thread's helper: the fills of one engine thread come one at a time. */
export const patchSearchThread = new PatchSearchThread();
