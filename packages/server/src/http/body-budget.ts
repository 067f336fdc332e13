/**
 * Request bytes the host holds at once, across every request. A body takes
 * its share before it is read (its `Content-Length`, or chunk by chunk when
 * chunked) and gives it back when its response closes, so memory stays
 * bounded however many large uploads arrive together; one that does not fit
 * is refused (503 with Retry-After), never queued.
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly capacityBytes: number) {}

  /** Takes `bytes` if they fit. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.capacityBytes) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used -= bytes;
  }

  get usedBytes(): number {
    return this.used;
  }
}
