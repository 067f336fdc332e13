# syntax=docker/dockerfile:1
# Retouch: one image for every role. The role is the command's --role (api, worker or all);
# compose.yaml runs one api and two workers from it. docs/deploy.md is the production checklist.
#
# Container images cannot be pulled or built on the project's machines, so these steps are
# proven another way: packages/server/test/dockerfile.test.ts parses this file and runs the
# build stage's RUN steps in a clean clone (offline, from the local pnpm store), emulates the
# runtime stage's COPY, ENV, WORKDIR and CMD, starts the service and runs the HEALTHCHECK.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: the README's install and build commands, then a production-only install ----
FROM ${NODE_IMAGE} AS build
# The pnpm that package.json's packageManager pins (the README's `npm i -g pnpm@10`, exactly).
ARG PNPM_VERSION=10.34.9
RUN npm install --global --no-audit --no-fund pnpm@${PNPM_VERSION}
WORKDIR /app
# The lockfile alone first: the download layer is cached until the dependencies change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY patches ./patches
RUN pnpm fetch
COPY . .
# `pnpm install` also builds the dashboard (packages/web's postinstall); sharp and onnxruntime-node
# bring their linux-x64 glibc binaries as packages, so nothing is compiled here.
RUN pnpm install --frozen-lockfile --offline
RUN pnpm build
# What runs needs no compiler, test runner or linter: a fresh install of the production
# dependencies alone, from the store filled above (no network). packages/server/dist and
# packages/web/dist are build outputs, not in node_modules, so they stay.
RUN rm -rf node_modules packages/*/node_modules examples/*/node_modules \
  && pnpm install --prod --frozen-lockfile --offline

# ---- runtime: the built service and its production dependencies, run by an unprivileged user ----
FROM ${NODE_IMAGE} AS runtime
# HOST: a container's port is reached through its own interface, not loopback.
# PORT set: a worker listens too, for /healthz, /readyz and /metrics only (its probes).
# MALLOC_*, GLIBC_TUNABLES: what `pnpm start` sets itself; the image runs the bundle directly (README, Memory).
# NODE_COMPILE_CACHE: V8's code cache in a folder of this user's (dist/ is read-only here).
ENV NODE_ENV=production \
  HOST=0.0.0.0 \
  PORT=3000 \
  RETOUCH_DATA_DIR=/var/lib/retouch \
  MALLOC_ARENA_MAX=2 \
  MALLOC_MMAP_THRESHOLD_=131072 \
  GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
  NODE_COMPILE_CACHE=/var/cache/retouch/compile-cache
# A fixed numeric id, so that an orchestrator's runAsNonRoot check can verify it; the code
# stays root's and read-only, only the data directory and the cache are the service's.
RUN groupadd --system --gid 10001 retouch \
  && useradd --system --uid 10001 --gid retouch --home-dir /var/lib/retouch --shell /usr/sbin/nologin retouch \
  && mkdir -p /var/lib/retouch /var/cache/retouch \
  && chown retouch:retouch /var/lib/retouch /var/cache/retouch
WORKDIR /app
COPY --from=build /app/package.json /app/pnpm-workspace.yaml ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/packages ./packages
USER 10001:10001
# Outboxed mail when SMTP_URL is unset, the auth secret when RETOUCH_AUTH_SECRET is unset, the
# embedded database when DATABASE_URL is unset, and the models (RETOUCH_MODELS_DIR).
VOLUME ["/var/lib/retouch"]
EXPOSE 3000
# Slim images have no curl: Node's own fetch asks /healthz (alive); /readyz is for load balancers.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "packages/server/dist/main.js", "--role", "all"]
