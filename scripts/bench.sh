#!/usr/bin/env bash
# Benchmark of the agent server: builds the release binaries and runs the
# load generator (tests/src/bin/loadgen.rs) against target/release/agent on
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
# Usage: scripts/bench.sh [loadgen flags...]
#   e.g. scripts/bench.sh --quick
#        scripts/bench.sh --json target/bench.json
#        scripts/bench.sh --conversations 10000 --clients 100
#        scripts/bench.sh --store postgres --database-url postgres://postgres@db:5432/postgres
#   scripts/bench.sh --help lists every flag.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo build --release -p asg-server -p asg-mcp-resources --bins -p asg-tests --bin loadgen

exec target/release/loadgen \
    --agent target/release/agent \
    --config testdata/agent-resources.yaml \
    "$@"
