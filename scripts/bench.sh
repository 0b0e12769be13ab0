#!/usr/bin/env bash
# Benchmark of the agent server: builds the release binaries and runs the
# load generator (tests/src/bin/loadgen.rs) against target/release/agent on
# 127.0.0.1 only. Bounded in requests and time; stops the agent at the end.
#
# Usage: scripts/bench.sh [loadgen flags...]
#   e.g. scripts/bench.sh --quick
#        scripts/bench.sh --json target/bench.json
#        scripts/bench.sh --conversations 10000 --clients 100
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo build --release -p asg-server --bins -p asg-tests --bin loadgen

exec target/release/loadgen \
    --agent target/release/agent \
    --config testdata/agent-resources.yaml \
    "$@"
