# syntax=docker/dockerfile:1
# The web process: the API (REST, tRPC, the Tinker protocol), the dashboard and
# the realtime relay. Build from the repository root:
#   docker build -f deploy/web.Dockerfile -t opentinker-web .
FROM node:22-bookworm-slim AS build
# The native kernels build at `npm ci` (a workspace's install script); the web
# process never loads them, but npm builds every workspace.
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make python3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
ENV NEXT_TELEMETRY_DISABLED=1 TURBO_TELEMETRY_DISABLED=1
RUN npm ci --no-audit --no-fund \
 && npx turbo run build --filter=@opentinker/web --output-logs=errors-only \
 # The starter model at the path the setup job registers (tokenizer for trajectories and the playground).
 && OPENTINKER_DATA_DIR=/app/.data node --import tsx scripts/starter-model.ts

FROM node:22-bookworm-slim
WORKDIR /app
COPY --from=build --chown=node:node /app /app
USER node
ENV NODE_ENV=production NEXT_TELEMETRY_DISABLED=1 HOST=0.0.0.0 PORT=3000 OPENTINKER_DATA_DIR=/app/.data
EXPOSE 3000
# SIGTERM drains: readiness turns 503, requests in flight get OPENTINKER_DRAIN_MS.
CMD ["node", "--import", "tsx", "apps/web/src/server/main.ts"]
