export const PLAN_NAMES = ["free", "starter", "core", "pro"] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface PlanLimits {
  /** Images accepted per minute (a batch counts each image). */
  submissionsPerMinute: number;
  /** Jobs still pending at once; also the largest batch accepted. */
  concurrentJobs: number;
}

/** The spec's "Limits" table. */
export const PLAN_LIMITS: Record<PlanName, PlanLimits> = {
  free: { submissionsPerMinute: 5, concurrentJobs: 3 },
  starter: { submissionsPerMinute: 15, concurrentJobs: 10 },
  core: { submissionsPerMinute: 40, concurrentJobs: 25 },
  pro: { submissionsPerMinute: 120, concurrentJobs: 50 },
};

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}
