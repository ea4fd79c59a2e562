# The switchyard server as a container image (docs/operations.md, "Deployment").
#
#   docker build -t switchyard .
#   docker run -p 4000:4000 -v "$PWD/routes.toml:/etc/switchyard/switchyard.toml:ro" \
#     -e OPENAI_API_KEY switchyard
#
# Two stages on the same Node base: `build` installs every dependency and compiles the workspace
# (`npm ci` runs the `prepare` build), then lays out the server and only what it needs at run time
# in /app (scripts/src/container-runtime.ts); the final stage copies that /app alone onto a fresh
# base and runs it as an unprivileged user. NODE_IMAGE picks the base for both stages (any Debian
# based image with `node` on the PATH); `npm run container-check` passes a locally made one.
ARG NODE_IMAGE=docker.io/library/node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.base.json tsconfig.build.json ./
COPY packages packages
COPY scripts scripts
RUN npm ci --no-audit --no-fund \
 && node scripts/dist/container-runtime.js /src /app

FROM ${NODE_IMAGE}
# A fixed numeric user, so `runAsNonRoot` checks and volume ownership can rely on it.
RUN groupadd --system --gid 10001 switchyard \
 && useradd --system --uid 10001 --gid switchyard --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin switchyard \
 && mkdir -p /etc/switchyard /var/log/switchyard \
 && chown switchyard:switchyard /var/log/switchyard
COPY --from=build /app /app
RUN ln -s /app/packages/server/bin/switchyard.js /usr/local/bin/switchyard
ENV NODE_ENV=production
# A 64 MB young generation (Node's default is 16): a request's parsed body — hundreds of KB for a
# coding agent's conversation — is then mostly gone before a minor collection would copy it
# (docs/operations.md, "The young generation").
ENV NODE_OPTIONS=--max-semi-space-size=64
WORKDIR /app
USER 10001:10001
EXPOSE 4000
# `/health` answers 200 while the server runs (inbound auth does not apply to it); node is all the
# image has for the probe. It asks port 4000: a command line with another --port needs its own.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:4000/health',{signal:AbortSignal.timeout(4000)}).then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["switchyard"]
# Loopback is the CLI's default; in a container the port must be reachable from outside it, so the
# image's command binds every interface, explicitly. Arguments given to `docker run` replace this
# whole command (e.g. `check --config /etc/switchyard/switchyard.toml`).
CMD ["serve", "--config", "/etc/switchyard/switchyard.toml", "--host", "0.0.0.0", "--port", "4000"]
