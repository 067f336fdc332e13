export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent verbatim as the body (for malformed JSON tests). */
  rawBody?: string | Buffer;
  key?: string;
  cookie?: string;
  headers?: Record<string, string>;
}

/** A thin fetch wrapper: real HTTP, parsed JSON when the response is JSON. */
export async function request<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.cookie) headers.cookie = options.cookie;
  let body: string | Buffer | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: "manual" });
  const text = await response.text();
  const isJson = response.headers.get("content-type")?.includes("json") ?? false;
  return { status: response.status, headers: response.headers, body: (isJson && text ? JSON.parse(text) : text) as T, text };
}
