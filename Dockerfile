# syntax=docker/dockerfile:1
# Build stage: full dependencies, compile TypeScript, then drop dev dependencies.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ormconfig.ts ./
# The build copies the files the server reads besides its JavaScript (the A2A .proto) into dist/.
COPY scripts/copy-assets.mjs ./scripts/
COPY src ./src
COPY console ./console
RUN npm run build && npm prune --omit=dev

# Runtime stage: compiled output and production dependencies only, as a non-root user.
FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production \
    ARBITER_HOME=/data \
    BIND=0.0.0.0 \
    PORT=8080
WORKDIR /app
RUN mkdir -p /data && chown node:node /data
COPY --from=build --chown=root:root /app/package.json ./package.json
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
USER node
VOLUME ["/data"]
EXPOSE 8080
# Liveness, not readiness: a replica whose database is briefly away must not be restarted for it (the gateway or
# orchestrator uses /v1/health/ready to route traffic away instead).
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/v1/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Migrations first (a no-op when up to date), then the server as PID 1's child via exec, with the Node flags of
# `npm start` (docs/operating.md, "Start-up and shutdown").
CMD ["sh", "-c", "node dist/src/cli/migrate.js && exec node --no-memory-reducer --import ./dist/src/tracing.js dist/src/main.js"]
