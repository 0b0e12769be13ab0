# Agent Stop and Go: the agent server and the mcp-resources tool server.
# Build:  docker build -t agent-stop-and-go .
# Run:    docker run -p 8080:8080 -e GEMINI_API_KEY=... agent-stop-and-go
# Demo:   docker run -p 8080:8080 agent-stop-and-go --config config/demo.yaml --host 0.0.0.0

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p asg-server --bins

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /app agent
WORKDIR /app
COPY --from=build /src/target/release/agent /src/target/release/mcp-resources /usr/local/bin/
COPY config ./config
COPY testdata/scripted ./testdata/scripted
RUN mkdir -p /app/data && chown agent /app/data
USER agent
ENV RUST_LOG=info
EXPOSE 8080
VOLUME ["/app/data"]
ENTRYPOINT ["agent"]
CMD ["--config", "config/agent.yaml"]
