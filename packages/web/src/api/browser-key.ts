import { Retouch } from "@retouch/sdk";
import { useSyncExternalStore } from "react";

/**
 * The API key this browser tab uses for what only a key may do: submitting
 * edits (the playground) and reading the webhook signing secret. The session
 * cookie is refused there by design. The key is kept in sessionStorage, so it
 * lives as long as the tab and is never written to disk by the page; whoever
 * could read it could already use the session to create keys, so it grants
 * nothing new. A key created in the dashboard becomes the tab's key.
 */
export interface BrowserKey {
  id: string | undefined;
  name: string;
  prefix: string;
  key: string;
}

const STORAGE_KEY = "retouch.browser_key";
const listeners = new Set<() => void>();
let cached: { raw: string | null; value: BrowserKey | undefined } | undefined;

function read(): BrowserKey | undefined {
  const raw = window.sessionStorage.getItem(STORAGE_KEY);
  if (cached?.raw === raw) return cached.value;
  let value: BrowserKey | undefined;
  try {
    value = raw ? (JSON.parse(raw) as BrowserKey) : undefined;
  } catch {
    value = undefined;
  }
  cached = { raw, value };
  return value;
}

export function setBrowserKey(key: BrowserKey | undefined): void {
  if (key) window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(key));
  else window.sessionStorage.removeItem(STORAGE_KEY);
  for (const listener of listeners) listener();
}

/** Forgets the tab's key when that key was revoked. */
export function forgetBrowserKey(id: string): void {
  if (read()?.id === id) setBrowserKey(undefined);
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function useBrowserKey(): BrowserKey | undefined {
  return useSyncExternalStore(subscribe, read);
}

/** The SDK with the tab's key: its submit, polling and result helpers, as any client uses them. */
export function retouchWithKey(key: string): Retouch {
  return new Retouch({ baseUrl: window.location.origin, apiKey: key, maxRetries: 2 });
}

/**
 * An Idempotency-Key. The SDK's default uses crypto.randomUUID, which browsers
 * offer on https and localhost only; a service on plain http elsewhere still works.
 */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
