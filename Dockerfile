# syntax=docker/dockerfile:1
# The catalogue service as one compiled executable on a slim Debian, run by a user without
# privileges, its data in a volume. docs/deployment.md ("Docker") says how to build and run it.
#
#   docker build -t catalogue .
#   docker run -d -p 3000:3000 -v catalogue-data:/var/lib/catalogue catalogue

# Build: Bun compiles src/ into one executable, dist/catalogue, as `bun run build` does anywhere.
FROM oven/bun:1.4.5 AS build
WORKDIR /build
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production
COPY tsconfig.json ./
COPY src ./src
RUN bun run build && ./dist/catalogue --version

# Run: the executable alone. It needs the C library and nothing else (no Bun, no node_modules, and
# no curl: the health check is the executable's own `catalogue healthcheck`).
FROM debian:bookworm-slim
RUN useradd --system --user-group --uid 10001 --home-dir /var/lib/catalogue --no-create-home \
      --shell /usr/sbin/nologin catalogue \
 && install -d -o catalogue -g catalogue -m 0700 /var/lib/catalogue
COPY --from=build /build/dist/catalogue /usr/local/bin/catalogue
# DATA_DIR: the SQLite database is /var/lib/catalogue/catalogue.db, in the volume (unless
# DATABASE_URL names another database, PostgreSQL say).
ENV DATA_DIR=/var/lib/catalogue \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /var/lib/catalogue
VOLUME ["/var/lib/catalogue"]
USER catalogue:catalogue
EXPOSE 3000
# SIGTERM lets the requests in flight finish, for up to SHUTDOWN_TIMEOUT (10 s): give `docker stop`
# more than that (docker stop -t 15, compose's stop_grace_period).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["catalogue", "healthcheck"]
ENTRYPOINT ["catalogue"]
