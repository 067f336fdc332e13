import type { PlanName } from "../config/plans";
import { RetouchError } from "../errors/retouch-error";
import type { UserRecord, UsersStore } from "../stores/users.store";
import type { ProfilesService } from "./profiles.service";

/** Operator actions, addressed by email (`pnpm retouch admin ...`). */
export class AdminService {
  constructor(
    private readonly users: UsersStore,
    private readonly profiles: ProfilesService,
  ) {}

  async verifyEmail(email: string): Promise<UserRecord> {
    const user = await this.findUser(email);
    await this.users.markEmailVerified(user.id);
    return { ...user, emailVerified: true };
  }

  async grantCredits(email: string, amount: number, note?: string): Promise<{ user: UserRecord; balance: number }> {
    const user = await this.findUser(email);
    return { user, balance: await this.profiles.grantCredits(user.id, amount, note) };
  }

  async setPlan(email: string, plan: PlanName): Promise<UserRecord> {
    const user = await this.findUser(email);
    await this.profiles.setPlan(user.id, plan);
    return user;
  }

  async describe(email: string) {
    const user = await this.findUser(email);
    const profile = await this.profiles.get(user.id);
    return { ...user, plan: profile.plan, credits: profile.credits };
  }

  private async findUser(email: string): Promise<UserRecord> {
    const user = await this.users.findByEmail(email);
    if (!user) throw new RetouchError("not_found", `No account with the email ${email}.`);
    return user;
  }
}
