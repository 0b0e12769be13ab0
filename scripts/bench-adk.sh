#!/usr/bin/env bash
# The anchors of the turn figure (issue 25's "agent turn" rows), apart
# from scripts/bench.sh because they need PyPI, crates.io and wrk. Every
# server answers the same turn from the same fast fake Gemini
# (tests/src/bin/fake_gemini.rs): "list resources" calls a tool that lists
# resources, then the model answers with the listing.
#
# - Google ADK: `adk api_server` (google-adk, pinned below, in the venv
#   target/adk-venv made here) on scripts/adk/resources, the tool
#   mcp-resources over stdio, sessions in its default local SQLite file;
#   POST /run round-robin over $ADK_SESSIONS sessions.
# - ADK-Rust: scripts/adk-rust (adk-rust 2.3.0, pinned by its Cargo.lock,
#   built into target/adk-rust), adk-server's POST /api/run, the tool in
#   process, sessions in memory (nothing durable); round-robin over
#   $ADK_RUST_SESSIONS sessions (as many as ours: it is fast enough that
#   500 sessions would grow long histories).
# - Ours: target/dist/agent (the `dist` profile: LTO, see Cargo.toml) on testdata/agent-gemini.yaml, the JSON
#   store in a fresh directory, mcp-resources over stdio;
#   POST /conversations/{id}/messages round-robin over $OUR_CONVERSATIONS
#   conversations.
#
# Each gets $CLIENTS connections for $DURATION s (wrk -t1, 10 s timeout);
# conversations stay short on all (a few turns each), since every model
# call carries the whole history. Prints each rate with its p50, p99,
# non-2xx count, RSS and the load average, then the ratios.
#
# Usage: scripts/bench-adk.sh   (CLIENTS=20 DURATION=20 ADK_SESSIONS=500
#        OUR_CONVERSATIONS=ADK_RUST_SESSIONS=10000 ANCHORS="adk adk-rust"
#        by default;
#        ASG_BENCH_BIN=DIR uses the agent, mcp-resources and fake-gemini
#        there instead of building; ADK_RUST_TARGET=DIR builds ADK-Rust's
#        anchor there instead of target/adk-rust)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
CLIENTS=${CLIENTS:-20}
SECONDS_EACH=${DURATION:-20}
ADK_SESSIONS=${ADK_SESSIONS:-500}
OUR_CONVERSATIONS=${OUR_CONVERSATIONS:-10000}
ADK_RUST_SESSIONS=${ADK_RUST_SESSIONS:-$OUR_CONVERSATIONS}
ADK_VERSION=2.13.0
ANCHORS=${ANCHORS:-adk adk-rust}
ADK_PORT=18095
OUR_PORT=18096
ADK_RUST_PORT=18097

command -v wrk >/dev/null || { echo "bench-adk: wrk is needed (apt-get install wrk)" >&2; exit 1; }
if [[ -n ${ASG_BENCH_BIN:-} ]]; then
  BIN=$(cd "$ASG_BENCH_BIN" && pwd)
else
  cargo build --profile dist -p asg-server -p asg-mcp-resources --bins -p asg-tests --bin fake-gemini
  BIN=$ROOT/target/dist
fi

wanted() { [[ " $ANCHORS " == *" $1 "* ]]; }

VENV=$ROOT/target/adk-venv
if wanted adk && ! "$VENV/bin/python" -c "import google.adk, mcp" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "google-adk==$ADK_VERSION" mcp
fi
ADK_RUST_TARGET=${ADK_RUST_TARGET:-$ROOT/target/adk-rust}
if wanted adk-rust; then
  CARGO_TARGET_DIR=$ADK_RUST_TARGET cargo build --release --locked \
    --manifest-path scripts/adk-rust/Cargo.toml
fi

WORK=$(mktemp -d)
stop() {
  for pid in ${PIDS:-}; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap stop EXIT

started() { # started PORT PATH: waits until http://127.0.0.1:PORT/PATH answers
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$1$2" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "bench-adk: nothing answers on port $1" >&2
  exit 1
}

load() { cut -d' ' -f1 /proc/loadavg; }

measure() { # measure NAME PID LUA URL
  local before out
  before=$(load)
  out=$(wrk -t1 -c"$CLIENTS" -d"${SECONDS_EACH}s" --timeout 10s --latency -s "$3" "$4")
  awk -v name="$1" -v rss="$(ps -o rss= -p "$2")" -v ld="$before -> $(load)" '
    /Requests\/sec/ {rate=$2} $1=="50%" {p50=$2} $1=="99%" {p99=$2} /Non-2xx/ {bad=$NF}
    END {printf "| %s | %.1f turns/s | %s | %s | %d | %d MiB | %s |\n", name, rate, p50, p99, bad, rss/1024, ld}' <<<"$out"
}

"$BIN/fake-gemini" >"$WORK/fake.out" &
PIDS="$!"
disown
until grep -q listening "$WORK/fake.out" 2>/dev/null; do sleep 0.1; done
FAKE=$(awk '{print $NF}' "$WORK/fake.out")

echo "| server | rate | p50 | p99 | non-2xx | RSS | load average |"
echo "|---|---|---|---|---|---|---|"

# ADK, its agent copied so its session database lands in $WORK.
ADK_LINE=
if wanted adk; then
  cp -r scripts/adk "$WORK/adk"
  (cd "$WORK" && GOOGLE_GEMINI_BASE_URL=$FAKE GOOGLE_API_KEY=fake-gemini-key \
    GOOGLE_GENAI_USE_VERTEXAI=0 MCP_RESOURCES=$BIN/mcp-resources \
    exec "$VENV/bin/adk" api_server --host 127.0.0.1 --port $ADK_PORT "$WORK/adk" >"$WORK/adk.log" 2>&1) &
  ADK=$!
  PIDS="$PIDS $ADK"
  disown
  started $ADK_PORT /list-apps
  for n in $(seq 0 $((ADK_SESSIONS - 1))); do
    curl -sf -X POST -H 'content-type: application/json' -d '{}' \
      "http://127.0.0.1:$ADK_PORT/apps/resources/users/u/sessions/s$n" >/dev/null
  done
  ADK_LINE=$(SESSIONS=$ADK_SESSIONS measure "ADK $ADK_VERSION api_server" "$ADK" scripts/adk/run.lua "http://127.0.0.1:$ADK_PORT")
  echo "$ADK_LINE"
  kill -9 "$ADK"
fi

# ADK-Rust: the same sessions, on adk-server's REST API.
ADK_RUST_LINE=
if wanted adk-rust; then
  GEMINI_BASE_URL=$FAKE GEMINI_API_KEY=fake-gemini-key PORT=$ADK_RUST_PORT \
    "$ADK_RUST_TARGET/release/adk-rust-anchor" >"$WORK/adk-rust.log" 2>&1 &
  ADK_RUST=$!
  PIDS="$PIDS $ADK_RUST"
  disown
  started $ADK_RUST_PORT /api/health
  seq 0 $((ADK_RUST_SESSIONS - 1)) | xargs -P4 -I@ curl -sf -X POST -H 'content-type: application/json' \
    -d '{}' "http://127.0.0.1:$ADK_RUST_PORT/api/apps/resources/users/u/sessions/s@" -o /dev/null
  ADK_RUST_LINE=$(RUN_API=adk-rust SESSIONS=$ADK_RUST_SESSIONS measure "ADK-Rust 2.3.0 adk-server" "$ADK_RUST" scripts/adk/run.lua "http://127.0.0.1:$ADK_RUST_PORT")
  echo "$ADK_RUST_LINE"
  kill -9 "$ADK_RUST"
fi

# Ours.
(cd "$WORK" && PATH=$BIN:$PATH GEMINI_BASE_URL=$FAKE GEMINI_API_KEY=fake-gemini-key RUST_LOG=warn \
  exec "$BIN/agent" --config "$ROOT/testdata/agent-gemini.yaml" --port $OUR_PORT --data-dir "$WORK/data" >"$WORK/agent.log" 2>&1) &
OURS=$!
PIDS="$PIDS $OURS"
disown
started $OUR_PORT /health
echo '{}' >"$WORK/empty.json"
seq 1 "$OUR_CONVERSATIONS" | xargs -P4 -I{} curl -sf -X POST -H 'content-type: application/json' \
  --data-binary "@$WORK/empty.json" "http://127.0.0.1:$OUR_PORT/conversations" -o "$WORK/c.{}.json"
cat "$WORK"/c.*.json | grep -o '"conversation":{"id":"[0-9a-f-]*' | cut -d'"' -f6 >"$WORK/ids"
rm -f "$WORK"/c.*.json
OUR_LINE=$(IDS=$WORK/ids measure "agent (JSON store)" "$OURS" scripts/adk/messages.lua "http://127.0.0.1:$OUR_PORT")
echo "$OUR_LINE"

rate() { awk -F'|' '{print $3+0}' <<<"$1"; }
ratio() { # ratio ANCHOR_LINE NAME GOAL
  [[ -n $1 ]] || return 0
  awk -v ours="$(rate "$OUR_LINE")" -v anchor="$(rate "$1")" -v name="$2" -v goal="$3" \
    'BEGIN {if (anchor > 0) printf "ratio to %s: %.2fx (goal: at least %s)\n", name, ours / anchor, goal;
            else printf "ratio to %s: it answered nothing\n", name}'
}
echo
ratio "$ADK_LINE" "ADK" "40x"
ratio "$ADK_RUST_LINE" "ADK-Rust" "1x"
