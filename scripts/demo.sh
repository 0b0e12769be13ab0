#!/usr/bin/env bash
# Builds and runs the keyless demo: the resource manager agent on the
# offline scripted model, with the mcp-resources tool server.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p asg-server --bins
echo
echo "Agent API:  http://127.0.0.1:8080   (docs: http://127.0.0.1:8080/docs)"
echo "Try:        curl -s -X POST localhost:8080/conversations -d '{\"message\":\"list resources\"}'"
echo
exec ./target/release/agent --config config/demo.yaml "$@"
