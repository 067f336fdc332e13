import { createAuth } from "../auth/auth";
import type { Config } from "../config/env";
import type { Db } from "../db/database";
import type { Logger } from "../lib/logger";
import type { Mailer } from "../mail/mailer";
import { verificationEmail } from "../mail/verification-email";
import { ApiKeysStore } from "../stores/api-keys.store";
import { ProfilesStore } from "../stores/profiles.store";
import { RateLimitsStore } from "../stores/rate-limits.store";
import { UsersStore } from "../stores/users.store";
import { AccountsService } from "./accounts.service";
import { AdminService } from "./admin.service";
import { ApiKeysService } from "./api-keys.service";
import { ProfilesService } from "./profiles.service";

export interface ServiceDependencies {
  db: Db;
  config: Config;
  logger: Logger;
  mailer: Mailer;
  /** Signs session cookies and verification tokens. */
  authSecret: string;
}

/** Every domain service, wired once. The HTTP host, the worker, the admin CLI and tests all start here. */
export function createServices(deps: ServiceDependencies) {
  const { db, config, logger, mailer } = deps;
  const stores = {
    apiKeys: new ApiKeysStore(db),
    profiles: new ProfilesStore(db),
    rateLimits: new RateLimitsStore(db),
    users: new UsersStore(db),
  };
  const auth = createAuth({
    db,
    config,
    secret: deps.authSecret,
    logger,
    sendVerificationLink: async (user, link) => {
      const { location } = await mailer.send(verificationEmail(user, link));
      // Without SMTP the developer reads the link here (or in the .eml file).
      if (mailer.kind === "outbox")
        logger.info({ to: user.email, file: location, link }, "verification email written to the outbox");
    },
  });
  const profiles = new ProfilesService(stores.profiles, config);
  return {
    config,
    logger,
    stores,
    auth,
    profiles,
    accounts: new AccountsService({ auth, profiles, rateLimits: stores.rateLimits, config, logger }),
    apiKeys: new ApiKeysService(stores.apiKeys),
    admin: new AdminService(stores.users, profiles),
  };
}

export type Services = ReturnType<typeof createServices>;
