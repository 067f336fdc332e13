import { describe, expect, it } from "vitest";
import { RetouchMetrics } from "../src/lib/metrics";

describe("RetouchMetrics' queue gauges", () => {
  it("read the queue once per scrape for both gauges", async () => {
    const metrics = new RetouchMetrics({ defaultMetrics: false });
    let reads = 0;
    metrics.collectQueueFrom(async () => {
      reads++;
      return { waiting: 3, running: 1, oldestPendingAt: new Date(Date.now() - 90_000) };
    });
    const { text } = await metrics.scrape();
    expect(reads).toBe(1);
    expect(text).toContain('retouch_queue_jobs{state="waiting"} 3');
    expect(text).toContain('retouch_queue_jobs{state="running"} 1');
    const age = Number(/^retouch_queue_oldest_pending_age_seconds (\S+)$/m.exec(text)?.[1]);
    expect(age).toBeGreaterThanOrEqual(90);
  });

  it("leave their figures out, and the rest of the scrape answers, when the database never answers", async () => {
    const metrics = new RetouchMetrics({ defaultMetrics: false });
    metrics.collectQueueFrom(() => new Promise(() => {}));
    metrics.webhookAttempts.inc({ outcome: "delivered" });
    const { text } = await metrics.scrape();
    expect(text).not.toMatch(/^retouch_queue_jobs\{/m);
    expect(text).toContain('retouch_webhook_attempts_total{outcome="delivered"} 1');
  });
});
