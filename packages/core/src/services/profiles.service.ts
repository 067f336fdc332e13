import type { Config } from "../config/env";
import type { PlanName } from "../config/plans";
import { RetouchError } from "../errors/retouch-error";
import { randomHex } from "../lib/secrets";
import type { Profile, ProfilesStore } from "../stores/profiles.store";

/** Plan, credit balance and webhook signing secret of an account. */
export class ProfilesService {
  constructor(
    private readonly store: ProfilesStore,
    private readonly config: Pick<Config, "defaultPlan" | "signupCredits">,
  ) {}

  /** Creates the profile with the sign-up grant, once. */
  ensure(userId: string): Promise<Profile> {
    return this.store.ensure({
      userId,
      plan: this.config.defaultPlan,
      credits: this.config.signupCredits,
      webhookSecret: randomHex(32),
    });
  }

  async get(userId: string): Promise<Profile> {
    return (await this.store.find(userId)) ?? this.ensure(userId);
  }

  async webhookSecret(userId: string): Promise<string> {
    return (await this.get(userId)).webhookSecret;
  }

  /** Adds (or, with a negative amount, removes) credits; returns the new balance. */
  async grantCredits(userId: string, amount: number, note?: string): Promise<number> {
    if (!Number.isInteger(amount) || amount === 0) {
      throw new RetouchError("invalid_request", "The amount must be a non-zero whole number of credits.");
    }
    await this.get(userId);
    const balance = await this.store.applyCreditChange({
      userId,
      delta: amount,
      reason: "admin_grant",
      ...(note ? { note } : {}),
    });
    if (balance === undefined) {
      throw new RetouchError("invalid_request", "Removing that many credits would make the balance negative.");
    }
    return balance;
  }

  async setPlan(userId: string, plan: PlanName): Promise<void> {
    await this.get(userId);
    await this.store.setPlan(userId, plan);
  }
}
