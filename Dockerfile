# Faultline's container image: `faultline serve` on port 8080, data in the /data volume.
#
#   docker build -t faultline .
#   docker run -d --name faultline -p 8080:8080 -v faultline-data:/data -e API_KEYS=<a long random key> faultline
#
# BASE is any Debian-based image with Node.js 20 and npm under /usr/local, as the
# official node images have them; .ci/image builds one from a Debian mirror where no
# registry is reachable. README ("Container") describes running, upgrading and backups.
ARG BASE=node:20-bookworm-slim

# Build stage: the C++ toolchain for better-sqlite3, every dependency (the dev ones
# compile the TypeScript), then only what runs is kept.
FROM ${BASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
# better-sqlite3 is compiled from source against the image's own Node headers, its
# files in parallel (JOBS, read by node-gyp).
ENV npm_config_nodedir=/usr/local \
    npm_config_build_from_source=true \
    JOBS=max \
    npm_config_fund=false \
    npm_config_audit=false \
    npm_config_update_notifier=false
COPY package.json package-lock.json ./
# A certificate bundle given as the build secret `npm_ca` (a registry behind a TLS
# proxy) is used when present. Install scripts are skipped except better-sqlite3's:
# the others fetch tools only the tests use.
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then \
      export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca npm_config_cafile=/run/secrets/npm_ca; \
    fi \
 && npm ci --ignore-scripts \
 && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# Then: production dependencies only, without type declarations, TypeScript sources,
# source maps and docs; better-sqlite3 without its C sources and object files; the
# Workers edition (it runs on Cloudflare, not here); a stripped Node binary.
RUN npx tsc -p tsconfig.build.json \
 && npm prune --omit=dev --ignore-scripts \
 && rm -rf dist/editions/workers \
 && find dist -name '*.map' -delete \
 && chmod +x dist/cli/main.js \
 && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \
      -o \( -name '*.md' ! -iname 'licen?e*' \) \) -delete \
 && mv node_modules/better-sqlite3/build/Release/better_sqlite3.node /tmp/ \
 && rm -rf node_modules/better-sqlite3/build node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
 && mkdir -p node_modules/better-sqlite3/build/Release \
 && strip --strip-unneeded -o node_modules/better-sqlite3/build/Release/better_sqlite3.node /tmp/better_sqlite3.node \
 && strip -o /build/node "$(command -v node)"

# The runtime's file system: the base without npm, yarn, headers, docs and locales,
# plus the application and a user to run it.
FROM ${BASE} AS runtime-root
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* /usr/local/include /usr/local/share/doc \
      /usr/local/share/man /usr/local/share/systemtap /usr/local/CHANGELOG.md /usr/local/README.md /usr/local/LICENSE \
      /usr/share/doc /usr/share/man /usr/share/info /usr/share/locale /usr/share/lintian \
      /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old /var/log/* /root/.npm /tmp/* \
 && groupadd --system --gid 10001 faultline \
 && useradd --system --uid 10001 --gid faultline --home-dir /data --no-create-home --shell /usr/sbin/nologin faultline \
 && mkdir -p /data /app \
 && chown faultline:faultline /data
COPY --from=build /build/node /usr/local/bin/node
COPY --from=build /build/package.json /app/package.json
COPY --from=build /build/node_modules /app/node_modules
COPY --from=build /build/dist /app/dist
RUN ln -s /app/dist/cli/main.js /usr/local/bin/faultline

# One layer: what the stage above deleted takes no room in the image.
FROM scratch
COPY --from=runtime-root / /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DATABASE_URL=sqlite:/data/faultline.db \
    HOST=0.0.0.0 \
    PORT=8080 \
    MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /data
USER faultline
VOLUME /data
EXPOSE 8080
# GET /health answers 200 while the database answers (README, Health).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node itself is process 1 with the options of `npm start` (README, Node options): it
# handles SIGTERM, finishes the requests in flight and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "--max-old-space-size=1536", "--v8-pool-size=2", "/app/dist/cli/main.js"]
CMD ["serve"]
