import type { Migration } from "kysely/migration";
import * as accounts from "./0001-accounts.migration";

/**
 * Every schema change, in order. Forward-only: a released migration is never
 * edited or removed; a change is a new file with the next number.
 */
export const migrations: Record<string, Migration> = {
  "0001-accounts": accounts,
};
