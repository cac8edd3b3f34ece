# The attune image: workers and the CLI. Attune runs its TypeScript sources through tsx (a
# production dependency), so there is no compile step: the build stage installs the production
# packages, the final stage copies them with the sources and runs as a non-root user.
#   docker build -t attune --build-arg NODE_IMAGE=node:26-bookworm-slim .
# The default base is the Node.js LTS the tests run on (scripts/node-lts.sh; test/packaging checks they agree).
ARG NODE_IMAGE=node:26-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# Native modules without a prebuilt binary for the platform compile here.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Exactly the locked versions, production only (test/packaging checks that `npm ci` accepts the lockfile).
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error \
  && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
  ATTUNE_HOME=/var/lib/attune \
  ATTUNE_LOG_FORMAT=json
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY configs ./configs
COPY scenarios ./scenarios
# The capability suites' vendored problems (attune eval --suite).
COPY evals ./evals
# The code suite (attune eval --suite code) runs model-written programs under the system's python3 in
# the worker's sandbox (docs/sandbox.md; docker-compose.sandbox.yml lets the container confine them).
# The artifacts volume takes this directory's owner when Docker creates it.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 \
  && rm -rf /var/lib/apt/lists/* \
  && ln -s /app/bin/attune.js /usr/local/bin/attune \
  && mkdir -p /var/lib/attune/artifacts \
  && chown -R node:node /var/lib/attune
USER node
ENTRYPOINT ["attune"]
CMD ["--help"]
