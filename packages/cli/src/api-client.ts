/** An error answer from the Retouch API: the spec `code`, the HTTP status, and the server's message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The server could not be reached at all. */
export class NetworkError extends Error {
  constructor(url: string, cause: unknown) {
    super(
      `cannot reach ${url}: ${cause instanceof Error ? (cause.cause instanceof Error ? cause.cause.message : cause.message) : String(cause)}`,
    );
    this.name = "NetworkError";
  }
}

export interface Credentials {
  apiKey?: string;
  sessionCookie?: string;
}

export interface ApiResult<T> {
  body: T;
  headers: Headers;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly credentials: Credentials = {},
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.credentials.apiKey) headers.authorization = `Bearer ${this.credentials.apiKey}`;
    else if (this.credentials.sessionCookie) headers.cookie = this.credentials.sessionCookie;
    if (body !== undefined) headers["content-type"] = "application/json";
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    try {
      response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    } catch (error) {
      throw new NetworkError(this.baseUrl, error);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const error = (parsed ?? {}) as { code?: string; message?: string };
      const retryAfter = Number(response.headers.get("retry-after"));
      throw new ApiError(
        response.status,
        error.code ?? `http_${response.status}`,
        error.message ?? `${method} ${path} answered ${response.status}`,
        Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
      );
    }
    return { body: parsed as T, headers: response.headers };
  }
}
