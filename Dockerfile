# syntax=docker/dockerfile:1
# Agent Stop and Go: one image with every binary — agent, mcp-resources,
# mcp-filesystem, web — and the web chat's bundle (/app/web/dist).
#
#   docker build -t agent-stop-and-go .
#   docker compose up --build                      # the multi-agent stack (docker-compose.yaml)
#   docker run -p 127.0.0.1:8080:8080 agent-stop-and-go \
#     agent --config config/demo.yaml --host 0.0.0.0   # one agent, offline model
#   docker run -p 127.0.0.1:8080:8080 -e GEMINI_API_KEY=... agent-stop-and-go   # config/agent.yaml on Gemini
#
# The command picks the binary (no ENTRYPOINT). Data lives under /app/data
# (a volume); relative paths in the configs are relative to /app.
# Needs BuildKit (the default builder since Docker 23) for the cache mounts
# and the here-document below.

ARG RUST_IMAGE=rust:1.95-bookworm

# ---- native binaries ---------------------------------------------------------
FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# The target directory is a build cache; the binaries are copied out of it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server --bins \
 && mkdir -p /out \
 && for bin in agent mcp-resources mcp-filesystem web; do \
      cp "target/release/$bin" /out/; \
    done

# ---- the web chat (Leptos, wasm32) -------------------------------------------
# The tools first, in their own layer (about 20 minutes to compile, then
# cached): the wasm32 target, trunk and wasm-bindgen-cli at the version
# pinned in web/Cargo.toml, and Node.js for a current wasm-opt (binaryen
# from npm; Debian's is too old for wasm-bindgen's output). Then the same
# script a developer runs, which finds them and skips their installation.
FROM ${RUST_IMAGE} AS web-tools
RUN apt-get update \
 && apt-get install -y --no-install-recommends binaryen nodejs npm \
 && rm -rf /var/lib/apt/lists/*
RUN rustup target add wasm32-unknown-unknown \
 && cargo install trunk --version 0.21.14 --locked
COPY web/Cargo.toml /tmp/web-Cargo.toml
RUN version=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' /tmp/web-Cargo.toml) \
 && cargo install wasm-bindgen-cli --version "$version"

FROM web-tools AS web
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    bash scripts/build-web.sh \
 && test -f web/dist/index.html

# ---- runtime -----------------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /app agent

# Health check without curl or wget: the image has bash, whose /dev/tcp
# speaks enough HTTP for a GET of /health on the local port (the binaries
# have no --healthcheck mode, and curl would add a dozen libraries).
# `asg-healthcheck [URL]` (default $HEALTHCHECK_URL) exits 0 on a 2xx.
COPY --chmod=755 <<'EOF' /usr/local/bin/asg-healthcheck
#!/bin/bash
# asg-healthcheck [http://HOST:PORT/PATH]: 0 when a GET answers 2xx.
url=${1:-${HEALTHCHECK_URL:-http://127.0.0.1:8080/health}}
rest=${url#http://}
hostport=${rest%%/*}
path=${rest#"$hostport"}
path=${path:-/}
host=${hostport%:*}
port=${hostport##*:}
[ "$host" = "$hostport" ] && port=80
exec 3<>"/dev/tcp/$host/$port" || exit 1
printf 'GET %s HTTP/1.1\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' "$path" "$port" >&3
IFS=' ' read -r -t 5 _ status _ <&3 || exit 1
[[ $status == 2?? ]]
EOF

WORKDIR /app
COPY --from=build /out/ /usr/local/bin/
COPY --from=web /src/web/dist ./web/dist
COPY config ./config
COPY testdata/scripted ./testdata/scripted
RUN mkdir -p /app/data/workspace && chown -R agent /app/data
USER agent
ENV RUST_LOG=info \
    HEALTHCHECK_URL=http://127.0.0.1:8080/health
# agents and web: 8080; mcp-resources: 8090; mcp-filesystem: 8091.
EXPOSE 8080 8090 8091
VOLUME ["/app/data"]
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["asg-healthcheck"]
CMD ["agent", "--config", "config/agent.yaml"]
