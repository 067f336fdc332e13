import { useSyncExternalStore } from "react";

/**
 * The last API key created in this browser tab, so the Connect page can fill
 * in its prefix (never the key) where a client's key goes. The dashboard
 * itself needs no key: the playground and the webhook secret are read on the
 * session. Only the key's name and prefix are kept (sessionStorage, as long as
 * the tab lives), never the key itself, which nothing in the page uses.
 */
export interface BrowserKey {
  id: string | undefined;
  name: string;
  prefix: string;
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
