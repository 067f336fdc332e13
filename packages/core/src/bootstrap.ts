/**
 * What a process needs before the rest of core: its configuration, its
 * logger, and its database, opened and migrated. A separate entry
 * (`@retouch/core/bootstrap`) because a bundler loads every module that a
 * file imports through the main index up front: the server's entry imports
 * only this, starts PostgreSQL, and loads everything else while the
 * database boots.
 */
export { BlobStoreError } from "./blobs/blob-store";
export { type Config, ConfigError, loadConfig } from "./config/env";
export { type DatabaseHandle, openDatabase } from "./db/database";
export { migrateToLatest } from "./db/migrate";
export { createLogger, type Logger } from "./lib/logger";
export { randomHex } from "./lib/secrets";
