import { RetouchError } from "../errors/retouch-error";
import { newId } from "../lib/ids";
import { constantTimeEqual, randomBase64Url, sha256Hex } from "../lib/secrets";
import type { ApiKeysStore } from "../stores/api-keys.store";
import type { Principal } from "./principal";

export const API_KEY_PREFIX = "pk_";
const API_KEY_RANDOM_BYTES = 32;
const DISPLAY_PREFIX_LENGTH = 15;
// pk_ + base64url of 32 bytes (43 characters).
const API_KEY_SHAPE = /^pk_[A-Za-z0-9_-]{43}$/;

export interface ApiKeyListing {
  id: string;
  name: string;
  prefix: string;
  lastUsedAt: string | null;
  createdAt: string;
}

export interface CreatedApiKey {
  key: string;
  id: string;
  prefix: string;
  name: string;
}

export class ApiKeysService {
  constructor(private readonly store: ApiKeysStore) {}

  async create(principal: Principal, name: string): Promise<CreatedApiKey> {
    if (!principal.emailVerified) throw new RetouchError("email_unverified");
    const key = `${API_KEY_PREFIX}${randomBase64Url(API_KEY_RANDOM_BYTES)}`;
    const created = { id: newId("key"), name, prefix: `${key.slice(0, DISPLAY_PREFIX_LENGTH)}...` };
    await this.store.insert({ ...created, userId: principal.userId, keyHash: sha256Hex(key) });
    return { key, ...created };
  }

  async list(principal: Principal): Promise<ApiKeyListing[]> {
    const keys = await this.store.listForUser(principal.userId);
    return keys.map((key) => ({
      id: key.id,
      name: key.name,
      prefix: key.prefix,
      lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
      createdAt: key.createdAt.toISOString(),
    }));
  }

  async revoke(principal: Principal, id: string): Promise<{ ok: true }> {
    // Another account's key is "not found" too: its existence is not revealed.
    if (!(await this.store.deleteForUser(principal.userId, id))) {
      throw new RetouchError("not_found", `No API key with id ${id}.`);
    }
    return { ok: true };
  }

  /** Resolves a bearer key and records its use; undefined when it is not a live key. */
  async authenticate(key: string): Promise<Principal | undefined> {
    if (!API_KEY_SHAPE.test(key)) return undefined;
    const keyHash = sha256Hex(key);
    const owner = await this.store.touchByHash(keyHash);
    if (!owner || !constantTimeEqual(owner.keyHash, keyHash)) return undefined;
    return {
      userId: owner.userId,
      email: owner.email,
      name: owner.name,
      emailVerified: owner.emailVerified,
      via: "api_key",
      keyId: owner.keyId,
    };
  }
}
