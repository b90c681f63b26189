# syntax=docker/dockerfile:1
# A worker (one per GPU), supervised by `npm run worker`, on NVIDIA's CUDA base
# so the container gets the driver's libraries when it is given a GPU. Build
# from the repository root:
#   docker build -f deploy/worker.Dockerfile -t opentinker-worker .
# The same image runs the setup job (`npm run setup`: migrations, demo team,
# base models), which needs the engine to describe the models.
ARG CUDA_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu24.04
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:12.6.3-devel-ubuntu24.04

FROM node:22-bookworm-slim AS node

FROM ${CUDA_DEVEL_IMAGE} AS build
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/include/node /usr/local/include/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && apt-get update \
 && apt-get install -y --no-install-recommends g++ make python3 libopenblas-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# npm ci builds the native kernels (with OpenBLAS) against this Node's headers.
RUN npm ci --no-audit --no-fund \
 && OPENTINKER_DATA_DIR=/app/.data node --import tsx scripts/starter-model.ts

FROM ${CUDA_IMAGE}
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && apt-get update \
 && apt-get install -y --no-install-recommends libopenblas0 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1001 opentinker
WORKDIR /app
COPY --from=build --chown=opentinker:opentinker /app /app
USER opentinker
ENV NODE_ENV=production OPENTINKER_DATA_DIR=/app/.data WORKER_HEALTH_PORT=8081
EXPOSE 8081
# SIGTERM: the worker drains (running calls finish, a job checkpoints and goes
# back to the queue) within WORKER_DRAIN_MS, then the supervisor exits.
CMD ["node", "--import", "tsx", "scripts/worker-host.ts"]
