#!/usr/bin/env bash
# Benchmark of the agent server: builds the `dist` binaries and runs the
# load generator (tests/src/bin/loadgen.rs) against target/dist/agent on
# 127.0.0.1 only. Bounded in requests and time; stops the agent at the end.
#
# It measures startup, GET /health, GET /conversations/{id}, full turns and
# A2A message/send (A -> B) on the JSON files, then full turns and A2A on an
# agent whose store is PostgreSQL, then again on 3 agents (replicas) sharing
# one PostgreSQL database with the requests spread round-robin over them
# (column "PostgreSQL, 3 replicas", `postgres_3` in --json), and prints the
# three columns side by side, each figure with the load average before and
# after it.
#
# --store json|postgres|both (default both): `json` is the main run alone,
# `postgres` the two PostgreSQL columns alone. Each creates fresh databases
# (asg_bench_<random>_{a,b}; B's shared by the 3 replicas) on the server of
# --database-url, else $ASG_BENCH_DATABASE_URL, else $ASG_TEST_DATABASE_URL,
# else postgres://postgres@127.0.0.1:5432/postgres, and drops them at the
# end. When no server answers there, both print "skipped: no PostgreSQL at
# ..." and the rest of the benchmark still counts.
#
# Anchors, in the same run on the same machine: an axum hello-world
# (tests/src/bin/hello.rs) under the GET /conversations/{id} load (the
# two in alternating rounds, each reported as its median round), and the
# official a2a-sdk 0.3 echo server (tests/interop/echo_server.py, in the
# venv target/a2a-sdk-v03 that scripts/test.sh makes for the interop
# tests; made here too, with scripts/a2a-sdk-venv.sh, when missing) under
# the A2A load; "skipped: ..." when the venv cannot be made (no PyPI).
# Then the overload phases: 1,000 clients doing turns, then GETs (30 s
# each, 3 s with --quick) on fresh agents, their threads and RSS sampled,
# and the web chat bundle's size (web/dist, from scripts/build-web.sh).
# Then the cost of telemetry: the turn phase on fresh agents with
# telemetry off, GET /metrics scraped every second, and traces exported
# over OTLP/HTTP to a local sink (tests/src/bin/loadgen/telemetry.rs).
# The last table is the issue's: work | ours | anchor | ratio | goal |
# load average. The soft open-files limit is raised to the hard one (at
# least 1,000 client sockets in the load generator and as many in the
# agent). On 2 busy cores (load average about 10) a full --store json run
# took 2 min 45 s (the overload phases and their idle waits are 1 min 40 s
# of it; the PostgreSQL columns add their own turn and A2A phases);
# --quick took 85 s, the build check included.
#
# Usage: scripts/bench.sh [loadgen flags...]
#   e.g. scripts/bench.sh --quick
#        scripts/bench.sh --json target/bench.json
#        scripts/bench.sh --conversations 10000 --clients 100
#        scripts/bench.sh --store postgres --database-url postgres://postgres@db:5432/postgres
#   scripts/bench.sh --help lists every flag.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The `dist` profile (Cargo.toml): what the archives and the image ship.
cargo build --profile dist -p asg-server -p asg-mcp-resources --bins -p asg-tests --bin loadgen --bin hello

# The a2a-sdk anchor's venv, as the interop tests make it; without PyPI
# the load generator reports that anchor as skipped.
# shellcheck source=scripts/a2a-sdk-venv.sh
. scripts/a2a-sdk-venv.sh
if ! sdk_venv target/a2a-sdk-v03 0.3.26 uvicorn; then
  echo "bench: cannot make the a2a-sdk venv target/a2a-sdk-v03 (PyPI unreachable?); its anchor is skipped" >&2
  rm -rf target/a2a-sdk-v03
fi

# 1,000 overload clients: a socket each in the load generator and in the
# agent, which inherits this limit.
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -gt 65536 ]; then hard=65536; fi
if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt "$hard" ]; then
  ulimit -Sn "$hard"
fi

exec target/dist/loadgen \
    --agent target/dist/agent \
    --config testdata/agent-resources.yaml \
    "$@"
