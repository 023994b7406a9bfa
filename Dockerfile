# One image for every role: `serve` (default), `worker`, `migrate`, `admin ...`.
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles its native addon during npm ci.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
# npm ci compiles the TypeScript sources into dist/ and builds the operator console into dist/console
# (the prepare script; the console calls the APIs through the typed client), so they come in first.
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY scripts/prepare.js ./scripts/
COPY src ./src
COPY console ./console
COPY clients ./clients
RUN npm ci
COPY . .
RUN npm run build && npm run typecheck && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATABASE_URL=sqlite:/data/emergency.db \
    ATTACHMENT_STORE=file:/data/attachments
# What runs, nothing else: the compiled service and console, the launcher, the production dependencies.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8080/readyz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# SIGTERM triggers a graceful shutdown (stop accepting, finish in-flight requests, close device sockets).
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/emergency-api.js"]
CMD ["serve"]
