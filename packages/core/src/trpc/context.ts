import type { SessionResult } from "../services/accounts.service";
import type { Principal, RequestInfo } from "../services/principal";
import type { Services } from "../services/services";

/**
 * The pure context: what a procedure needs, with no trace of the transport.
 * The HTTP host builds one per request; tests build one directly and call
 * procedures through `createCaller`.
 */
export interface Context {
  services: Services;
  request: RequestInfo;
  /** Headers a procedure asks the transport to send back (the session's `Set-Cookie`). */
  responseHeaders: Array<[name: string, value: string]>;
  /**
   * The caller, when the transport already authenticated the request from its
   * headers (the HTTP host does, before reading the body): the procedures' auth
   * middleware reuses it instead of looking the credentials up again.
   */
  principal?: Principal;
}

export function createContext(services: Services, request: Partial<RequestInfo> = {}, principal?: Principal): Context {
  return {
    services,
    request: { headers: request.headers ?? new Headers(), ip: request.ip ?? "127.0.0.1" },
    responseHeaders: [],
    ...(principal ? { principal } : {}),
  };
}

/** The body for the client of a session operation (sign-in, sign-out...); its cookies go out as `Set-Cookie`. */
export function sessionResponse<T extends Pick<SessionResult, "setCookie">>(
  ctx: Context,
  { setCookie, ...body }: T,
): Omit<T, "setCookie"> {
  for (const cookie of setCookie) ctx.responseHeaders.push(["Set-Cookie", cookie]);
  return body;
}
