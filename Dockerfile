# Agent Stop and Go: one image with every binary — agent, mcp-resources,
# mcp-filesystem, web, the terminal client asg — and the web chat's bundle (/app/web/dist).
#
#   docker build -t agent-stop-and-go .
#   docker compose up --build                      # the multi-agent stack (docker-compose.yaml)
#   docker run -p 127.0.0.1:8080:8080 agent-stop-and-go \
#     agent --config config/demo.yaml --host 0.0.0.0   # one agent, offline model
#   docker run -p 127.0.0.1:8080:8080 -e GEMINI_API_KEY=... agent-stop-and-go   # config/agent.yaml on Gemini
#
# The command picks the binary (no ENTRYPOINT). Data lives under /app/data
# (a volume); relative paths in the configs are relative to /app. The root
# filesystem may be read-only (`docker run --read-only`): only /app/data
# is written.
#
# Two ways to fill the image (build argument ARTEFACTS):
#   source    (default) compiles the binaries and the chat bundle in build
#             stages from rust:1.95-bookworm (needs a registry to pull it).
#   prebuilt  takes them from the build context laid out like an unpacked
#             release archive (scripts/release.sh): bin/, web/dist/,
#             config/, testdata/scripted/ and deploy/docker/. Nothing is
#             compiled; scripts/test-docker.sh builds the image this way:
#               docker build --build-arg ARTEFACTS=prebuilt -f Dockerfile DIR
# Needs BuildKit (the default builder since Docker 23; DOCKER_BUILDKIT=1
# on older engines), which builds only the stages ARTEFACTS selects. No
# `# syntax=` line: the engine's own Dockerfile frontend is used, so an
# offline build pulls nothing but the base images.

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
ARG ARTEFACTS=source

# ---- native binaries ---------------------------------------------------------
FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# The target directory is a build cache; the binaries are copied out of it.
# The `dist` profile (Cargo.toml): release with whole-program LTO, as the
# release archives and the benchmarks build.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server -p asg-cli --bins \
 && mkdir -p /out \
 && for bin in agent mcp-resources mcp-filesystem web asg; do \
      cp "target/dist/$bin" /out/; \
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

# ---- what goes into the image, laid out like a release archive ------------------
FROM scratch AS artefacts-source
COPY --from=build /out/ /pkg/bin/
COPY --from=web /src/web/dist /pkg/web/dist
COPY config /pkg/config
COPY testdata/scripted /pkg/testdata/scripted
COPY deploy/docker/asg-healthcheck /pkg/bin/

FROM scratch AS artefacts-prebuilt
COPY bin/ /pkg/bin/
COPY web/dist /pkg/web/dist
COPY config /pkg/config
COPY testdata/scripted /pkg/testdata/scripted
COPY deploy/docker/asg-healthcheck /pkg/bin/

FROM artefacts-${ARTEFACTS} AS artefacts

# ---- runtime -----------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
# ca-certificates for HTTPS to model providers; installed only when the
# base lacks it (the offline test's base image has it already).
RUN if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && useradd --system --home /app --shell /usr/sbin/nologin agent

WORKDIR /app
# The binaries and asg-healthcheck [URL] (deploy/docker/asg-healthcheck:
# exits 0 when a GET answers 2xx; bash /dev/tcp, so no curl in the image).
COPY --from=artefacts /pkg/bin/ /usr/local/bin/
COPY --from=artefacts /pkg/web/dist ./web/dist
COPY --from=artefacts /pkg/config ./config
COPY --from=artefacts /pkg/testdata/scripted ./testdata/scripted
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
