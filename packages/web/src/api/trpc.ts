import { QueryCache, QueryClient } from "@tanstack/react-query";
import { createTRPCClient, httpLink } from "@trpc/client";
import { createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import { navigate } from "wouter/use-browser-location";
import { isTransient, isUnauthorized } from "./errors";
import type { AppRouter } from "./router";

/**
 * The dashboard's calls, all on the session cookie: the browser sends it
 * itself (same origin), so no header is set here. What REST takes a key for
 * (submitting edits, the webhook secret) has a session twin over tRPC
 * (`playground.*`, `webhooks.sessionSecret`), so the page never needs a key.
 */
export const trpcClient = createTRPCClient<AppRouter>({
  links: [httpLink({ url: `${window.location.origin}/trpc` })],
});

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refused session or a bad request will not change on its own: say so at once.
      retry: (failures, error) => isTransient(error) && failures < 2,
      refetchOnWindowFocus: false,
      staleTime: 10_000,
    },
  },
  queryCache: new QueryCache({
    onError: (error) => {
      // The session ended (signed out elsewhere, expired): back to sign-in, then here again.
      const here = window.location.pathname;
      if (isUnauthorized(error) && here.startsWith("/dashboard")) {
        navigate(`/sign-in?next=${encodeURIComponent(here)}`, { replace: true });
      }
    },
  }),
});

export const trpc = createTRPCOptionsProxy<AppRouter>({ client: trpcClient, queryClient });
