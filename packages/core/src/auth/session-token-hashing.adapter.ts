import type { DBAdapter, DBAdapterInstance, DBTransactionAdapter, Where } from "better-auth/adapters";
import { sha256Hex } from "../lib/secrets";

/**
 * better-auth stores session tokens as they are. This wrapper around its
 * database adapter stores `sha256:<hex>` instead, so a leaked database dump
 * holds no usable session. better-auth itself keeps seeing raw tokens: a row
 * found by its token (or just created) is handed back with the raw value.
 */
const HASHED = "sha256:";
const SESSION_MODEL = "session";
const TOKEN_FIELD = "token";

export function hashSessionToken(token: string): string {
  return token.startsWith(HASHED) ? token : `${HASHED}${sha256Hex(token)}`;
}

type Row = Record<string, unknown>;

/** Replaces token values in a where clause; remembers hash -> raw to restore results. */
function hashWhere(where: Where[] | undefined, known: Map<string, string>): Where[] | undefined {
  return where?.map((clause) => {
    if (clause.field !== TOKEN_FIELD) return clause;
    const hashOne = (value: string) => {
      const hashed = hashSessionToken(value);
      if (hashed !== value) known.set(hashed, value);
      return hashed;
    };
    if (typeof clause.value === "string") return { ...clause, value: hashOne(clause.value) };
    if (Array.isArray(clause.value)) {
      return { ...clause, value: (clause.value as unknown[]).map((v) => (typeof v === "string" ? hashOne(v) : v)) as string[] };
    }
    return clause;
  });
}

function restore<T>(row: T, known: Map<string, string>): T {
  if (!row || typeof row !== "object") return row;
  const token = (row as Row)[TOKEN_FIELD];
  if (typeof token !== "string") return row;
  const raw = known.get(token);
  return raw === undefined ? row : ({ ...(row as Row), [TOKEN_FIELD]: raw } as T);
}

function hashData<T extends Row>(data: T, known: Map<string, string>): T {
  const token = data[TOKEN_FIELD];
  if (typeof token !== "string") return data;
  const hashed = hashSessionToken(token);
  known.set(hashed, token);
  return { ...data, [TOKEN_FIELD]: hashed };
}

function wrap<A extends DBTransactionAdapter>(adapter: A): A {
  const forSession = (model: string) => model === SESSION_MODEL;
  const wrapped: DBTransactionAdapter = {
    ...adapter,
    create: async (args) => {
      if (!forSession(args.model)) return adapter.create(args);
      const known = new Map<string, string>();
      const row = await adapter.create({ ...args, data: hashData(args.data as Row, known) as typeof args.data });
      return restore(row, known);
    },
    findOne: async (args) => {
      if (!forSession(args.model)) return adapter.findOne(args);
      const known = new Map<string, string>();
      return restore(await adapter.findOne({ ...args, where: hashWhere(args.where, known) ?? [] }), known);
    },
    findMany: async (args) => {
      if (!forSession(args.model)) return adapter.findMany(args);
      const known = new Map<string, string>();
      const rows = await adapter.findMany({ ...args, where: hashWhere(args.where, known) });
      return rows.map((row) => restore(row, known));
    },
    count: async (args) => {
      if (!forSession(args.model)) return adapter.count(args);
      return adapter.count({ ...args, where: hashWhere(args.where, new Map()) });
    },
    update: async (args) => {
      if (!forSession(args.model)) return adapter.update(args);
      const known = new Map<string, string>();
      const row = await adapter.update({
        ...args,
        where: hashWhere(args.where, known) ?? [],
        update: hashData(args.update, known),
      });
      return restore(row, known);
    },
    updateMany: async (args) => {
      if (!forSession(args.model)) return adapter.updateMany(args);
      const known = new Map<string, string>();
      return adapter.updateMany({ ...args, where: hashWhere(args.where, known) ?? [], update: hashData(args.update, known) });
    },
    delete: async (args) => {
      if (!forSession(args.model)) return adapter.delete(args);
      return adapter.delete({ ...args, where: hashWhere(args.where, new Map()) ?? [] });
    },
    deleteMany: async (args) => {
      if (!forSession(args.model)) return adapter.deleteMany(args);
      return adapter.deleteMany({ ...args, where: hashWhere(args.where, new Map()) ?? [] });
    },
    consumeOne: async (args) => {
      if (!forSession(args.model)) return adapter.consumeOne(args);
      const known = new Map<string, string>();
      return restore(await adapter.consumeOne({ ...args, where: hashWhere(args.where, known) ?? [] }), known);
    },
    incrementOne: async (args) => {
      if (!forSession(args.model)) return adapter.incrementOne(args);
      const known = new Map<string, string>();
      return restore(await adapter.incrementOne({ ...args, where: hashWhere(args.where, known) ?? [] }), known);
    },
  };
  if ("transaction" in adapter && typeof adapter.transaction === "function") {
    const transaction = (adapter as unknown as DBAdapter).transaction;
    (wrapped as DBAdapter).transaction = (callback) => transaction((trx) => callback(wrap(trx)));
  }
  return wrapped as A;
}

export function withHashedSessionTokens(instance: DBAdapterInstance): DBAdapterInstance {
  return (options) => wrap(instance(options) as DBAdapter) as DBAdapter;
}
