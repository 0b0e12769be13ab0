#!/usr/bin/env bash
# Builds and runs the keyless demo: the resource manager agent on the
# offline scripted model (with the mcp-resources tool server) and the web
# chat in front of it. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server --bins
bash scripts/build-web.sh

./target/release/agent --config config/demo.yaml &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null' EXIT INT TERM
for _ in $(seq 1 100); do
  curl -sf http://127.0.0.1:8080/health >/dev/null 2>&1 && break
  sleep 0.1
done
echo
echo "  Web chat:   http://127.0.0.1:3000/"
echo "  Agent API:  http://127.0.0.1:8080/   (interactive docs: http://127.0.0.1:8080/docs)"
echo "  Try:        list resources  /  add resource web-1 with value 42"
echo
./target/release/web --config config/web.yaml
