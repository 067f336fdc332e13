import { LocalError } from "./errors";

/**
 * An image to send: a file path (Node only), an http(s) or file URL, a
 * `data:` URL, or bytes (Blob, ArrayBuffer, Uint8Array, Buffer). An http(s)
 * URL is sent as `image_url` (the service fetches it); everything else is
 * sent as base64.
 */
export type ImageInput = string | URL | Blob | ArrayBuffer | ArrayBufferView;

/** The address the service should fetch itself, for an http(s) URL; undefined for an input sent as bytes. */
export function remoteImageUrl(input: ImageInput): string | undefined {
  if (typeof input === "string") return /^https?:\/\//i.test(input) ? input : undefined;
  if (input instanceof URL) return input.protocol === "http:" || input.protocol === "https:" ? input.href : undefined;
  return undefined;
}

export function bytesToBase64(bytes: Uint8Array): string {
  const NodeBuffer = (globalThis as { Buffer?: { from(data: Uint8Array): { toString(encoding: "base64"): string } } }).Buffer;
  if (NodeBuffer) return NodeBuffer.from(bytes).toString("base64");
  // Browsers and edge runtimes: btoa over binary strings, in chunks to keep the argument list short.
  let binary = "";
  for (let offset = 0; offset < bytes.length; offset += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(offset, offset + 0x8000));
  }
  return btoa(binary);
}

async function readLocalFile(path: string): Promise<Uint8Array> {
  // Kept out of the static import graph, so browser and edge bundles never see node:fs.
  const specifier = "node:fs/promises";
  try {
    const fs = (await import(/* @vite-ignore */ specifier)) as { readFile(path: string): Promise<Uint8Array> };
    return new Uint8Array(await fs.readFile(path));
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT") throw new LocalError(`No file at ${path}.`, { cause: error });
    if (code === "ERR_UNKNOWN_BUILTIN_MODULE" || error instanceof TypeError) {
      throw new LocalError("File paths work in Node only; pass the bytes (a Blob or an ArrayBuffer) or a URL instead.", {
        cause: error,
      });
    }
    throw error;
  }
}

async function fetchBytes(url: string, fetchImpl: typeof fetch, signal?: AbortSignal): Promise<Uint8Array> {
  const response = await fetchImpl(url, signal ? { signal } : {});
  if (!response.ok) throw new LocalError(`Fetching the image at ${url} answered ${response.status}.`);
  return new Uint8Array(await response.arrayBuffer());
}

/**
 * The image as base64 (or a `data:` URL, passed through). An http(s) URL is
 * downloaded here; the client itself sends those as `image_url` instead.
 */
export async function imageToBase64(input: ImageInput, fetchImpl: typeof fetch, signal?: AbortSignal): Promise<string> {
  if (typeof input === "string") {
    if (input.startsWith("data:")) return input;
    if (/^https?:\/\//i.test(input)) return bytesToBase64(await fetchBytes(input, fetchImpl, signal));
    if (input.startsWith("file:")) return imageToBase64(new URL(input), fetchImpl, signal);
    return bytesToBase64(await readLocalFile(input));
  }
  if (input instanceof URL) {
    if (input.protocol === "file:") return bytesToBase64(await readLocalFile(decodeURIComponent(input.pathname)));
    return bytesToBase64(await fetchBytes(input.href, fetchImpl, signal));
  }
  if (typeof Blob !== "undefined" && input instanceof Blob) return bytesToBase64(new Uint8Array(await input.arrayBuffer()));
  if (input instanceof ArrayBuffer) return bytesToBase64(new Uint8Array(input));
  if (ArrayBuffer.isView(input)) return bytesToBase64(new Uint8Array(input.buffer, input.byteOffset, input.byteLength));
  throw new LocalError("Unsupported image input: pass a path, a URL, a Blob or bytes.");
}
