#!/usr/bin/env bash
# Starts the compose topology (docker-compose.yaml) as local processes, on
# the same configs (config/compose/*.yaml) and the same host ports:
#
#   web (chat) -> agent-a (orchestrator) --A2A--> agent-b (resources) -> mcp-resources
#                                         \-A2A--> agent-c (files)     -> mcp-filesystem
#
# Builds what is missing, starts each service once what it needs answers
# GET /health, prints the URLs and runs until Ctrl-C / SIGTERM, which stop
# every process it started (and it stops them all when one of them dies).
#
#   ./scripts/stack.sh
#   GEMINI_API_KEY=... ./scripts/stack.sh        # the three agents on Gemini
#
# Environment (all optional):
#   AGENT_MODEL       the agents' model; default: gemini-2.5-flash when
#                     GEMINI_API_KEY is set, else each agent's offline rules
#   STACK_PORT_BASE   N: web N, agent-a N+1, agent-b N+2, agent-c N+3,
#                     mcp-resources N+10, mcp-filesystem N+11
#                     (default: the compose file's 8080-8083, 8090, 8091)
#   WEB_PORT AGENT_A_PORT AGENT_B_PORT AGENT_C_PORT MCP_RESOURCES_PORT
#   MCP_FILESYSTEM_PORT  one port each (win over STACK_PORT_BASE)
#   STACK_HOST        listen address (default 127.0.0.1: nobody signs in)
#   STACK_DIR         working directory: data/ and logs/ (default data/stack)
#   STACK_BIN_DIR     use the binaries there as they are (e.g. target/debug);
#                     default: cargo build --release, then target/release
#   STACK_DIST_DIR    the chat bundle (default web/dist, built by
#                     scripts/build-web.sh when missing)
#   STACK_TIMEOUT     seconds each service may take to answer /health (60)
#   MCP_RESOURCES_TOKEN MCP_FILESYSTEM_TOKEN  the service tokens the tool
#                     servers require on /mcp and agents B / C send
#                     (default: a random one each, new on every run)
#   RUST_LOG          log levels (default info)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

# --- ports --------------------------------------------------------------------
if [ -n "${STACK_PORT_BASE:-}" ]; then
  base=$STACK_PORT_BASE
  defaults=("$base" $((base + 1)) $((base + 2)) $((base + 3)) $((base + 10)) $((base + 11)))
else
  defaults=(8080 8081 8082 8083 8090 8091)
fi
WEB_PORT=${WEB_PORT:-${defaults[0]}}
AGENT_A_PORT=${AGENT_A_PORT:-${defaults[1]}}
AGENT_B_PORT=${AGENT_B_PORT:-${defaults[2]}}
AGENT_C_PORT=${AGENT_C_PORT:-${defaults[3]}}
MCP_RESOURCES_PORT=${MCP_RESOURCES_PORT:-${defaults[4]}}
MCP_FILESYSTEM_PORT=${MCP_FILESYSTEM_PORT:-${defaults[5]}}

HOST=${STACK_HOST:-127.0.0.1}
STATE=${STACK_DIR:-$ROOT/data/stack}
TIMEOUT=${STACK_TIMEOUT:-60}
CONFIGS=$ROOT/config/compose
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
LOGS=$STATE/logs

# Where the services find each other: the configs read these (compose sets
# the same variables to the service names).
export MCP_RESOURCES_ADDR=127.0.0.1:$MCP_RESOURCES_PORT
export MCP_FILESYSTEM_ADDR=127.0.0.1:$MCP_FILESYSTEM_PORT
export AGENT_B_ADDR=127.0.0.1:$AGENT_B_PORT
export AGENT_C_ADDR=127.0.0.1:$AGENT_C_PORT
# Offline unless a key (or a model) says otherwise; the configs fall back
# to their scripted rules when AGENT_MODEL is empty.
export AGENT_MODEL=${AGENT_MODEL:-${GEMINI_API_KEY:+gemini-2.5-flash}}
export RUST_LOG=${RUST_LOG:-info}

# The service tokens between agent B and mcp-resources, agent C and
# mcp-filesystem (`auth_token_env` in their configs): random per run unless
# given, never printed. Only the processes that use one get it.
random_token() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
RESOURCES_TOKEN=${MCP_RESOURCES_TOKEN:-$(random_token)}
FILESYSTEM_TOKEN=${MCP_FILESYSTEM_TOKEN:-$(random_token)}
unset MCP_RESOURCES_TOKEN MCP_FILESYSTEM_TOKEN
START_ENV=()

say() { printf '==> %s\n' "$*"; }
die() { printf 'stack.sh: %s\n' "$*" >&2; exit 1; }

# 0 when GET url answers 2xx. Plain bash (/dev/tcp), so it needs no curl;
# the image's asg-healthcheck is the same code.
http_ok() (
  local url=$1 rest hostport path host port status
  rest=${url#http://}
  hostport=${rest%%/*}
  path=${rest#"$hostport"}
  path=${path:-/}
  host=${hostport%:*}
  port=${hostport##*:}
  exec 3<>"/dev/tcp/$host/$port" || exit 1
  printf 'GET %s HTTP/1.1\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' "$path" "$port" >&3
  IFS=' ' read -r -t 5 _ status _ <&3 || exit 1
  [[ $status == 2?? ]]
) 2>/dev/null

# 0 when something accepts connections on 127.0.0.1:port.
port_busy() ( exec 3<>"/dev/tcp/127.0.0.1/$1" ) 2>/dev/null

# --- binaries and the chat bundle -------------------------------------------
BINARIES=(agent mcp-resources mcp-filesystem web)
if [ -n "${STACK_BIN_DIR:-}" ]; then
  BIN=$(cd "$STACK_BIN_DIR" && pwd) || die "STACK_BIN_DIR=$STACK_BIN_DIR does not exist"
else
  say "building the binaries (cargo build --release -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server --bins)"
  cargo build --release -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server --bins
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
fi
for bin in "${BINARIES[@]}"; do
  [ -x "$BIN/$bin" ] || die "$BIN/$bin is missing (build it: cargo build -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server --bins)"
done

DIST=${STACK_DIST_DIR:-$ROOT/web/dist}
if [ ! -f "$DIST/index.html" ]; then
  [ -z "${STACK_DIST_DIR:-}" ] || die "no chat bundle in STACK_DIST_DIR=$DIST"
  say "building the chat bundle (scripts/build-web.sh)"
  bash scripts/build-web.sh
fi
DIST=$(cd "$DIST" && pwd)

# --- processes ------------------------------------------------------------------
for port in "$WEB_PORT" "$AGENT_A_PORT" "$AGENT_B_PORT" "$AGENT_C_PORT" \
  "$MCP_RESOURCES_PORT" "$MCP_FILESYSTEM_PORT"; do
  if port_busy "$port"; then
    die "port $port is already in use (another stack?); choose others with STACK_PORT_BASE"
  fi
done

mkdir -p "$LOGS" "$STATE/data/workspace"
PIDFILE=$STATE/stack.pids
: >"$PIDFILE"
NAMES=()
PIDS=()
STOPPING=no

# stop_all: SIGTERM to every process (the web first, the tool servers
# last), up to 15 s for them to finish, then SIGKILL for what is left.
stop_all() {
  [ "$STOPPING" = no ] || return 0
  STOPPING=yes
  trap '' INT TERM HUP
  [ ${#PIDS[@]} -gt 0 ] || return 0
  say "stopping the stack"
  local i pid deadline
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${PIDS[i]}" 2>/dev/null || true
  done
  deadline=$((SECONDS + 15))
  for pid in "${PIDS[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
      sleep 0.1
    done
  done
  for i in "${!PIDS[@]}"; do
    if kill -0 "${PIDS[i]}" 2>/dev/null; then
      echo "    ${NAMES[i]} (pid ${PIDS[i]}) did not stop in time: SIGKILL"
      kill -KILL "${PIDS[i]}" 2>/dev/null || true
    fi
  done
  wait 2>/dev/null || true
  rm -f "$PIDFILE"
  echo "    stopped"
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all; exit 129' HUP

# Each process gets its own session (setsid), so a Ctrl-C in the terminal
# reaches this script only, which then stops the stack in order.
DETACH=()
if command -v setsid >/dev/null 2>&1; then DETACH=(setsid); fi

# start NAME PROGRAM ARGS...: runs PROGRAM in the state directory (relative
# paths in the configs land there, as under /app in the image), output
# to logs/NAME.log. The VAR=VALUE entries of START_ENV are exported to
# that process only (in its environment, never on a command line), then
# START_ENV is emptied.
start() {
  local name=$1
  shift
  (
    cd "$STATE"
    for assignment in ${START_ENV[@]+"${START_ENV[@]}"}; do export "$assignment"; done
    exec ${DETACH[@]+"${DETACH[@]}"} "$@"
  ) >"$LOGS/$name.log" 2>&1 </dev/null &
  START_ENV=()
  NAMES+=("$name")
  PIDS+=($!)
  echo "$name $!" >>"$PIDFILE"
}

# healthy NAME URL: waits until URL answers 2xx; stops everything when the
# process dies or the time is up.
healthy() {
  local name=$1 url=$2 i pid="" deadline=$((SECONDS + TIMEOUT))
  for i in "${!NAMES[@]}"; do
    [ "${NAMES[i]}" = "$name" ] && pid=${PIDS[i]}
  done
  until http_ok "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "stack.sh: $name exited; the end of $LOGS/$name.log:" >&2
      tail -n 20 "$LOGS/$name.log" >&2 || true
      exit 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "stack.sh: $name did not answer $url within ${TIMEOUT}s; the end of $LOGS/$name.log:" >&2
      tail -n 20 "$LOGS/$name.log" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  printf '    %-15s healthy  %s\n' "$name" "$url"
}

local_url() { printf 'http://127.0.0.1:%s' "$1"; }

say "starting the stack in $STATE (logs in $LOGS)"
START_ENV=("MCP_RESOURCES_TOKEN=$RESOURCES_TOKEN")
start mcp-resources "$BIN/mcp-resources" --config "$CONFIGS/mcp-resources.yaml" \
  --host "$HOST" --port "$MCP_RESOURCES_PORT"
START_ENV=("MCP_FILESYSTEM_TOKEN=$FILESYSTEM_TOKEN")
start mcp-filesystem "$BIN/mcp-filesystem" --config "$CONFIGS/mcp-filesystem.yaml" \
  --host "$HOST" --port "$MCP_FILESYSTEM_PORT"
healthy mcp-resources "$(local_url "$MCP_RESOURCES_PORT")/health"
healthy mcp-filesystem "$(local_url "$MCP_FILESYSTEM_PORT")/health"

START_ENV=("MCP_RESOURCES_TOKEN=$RESOURCES_TOKEN")
start agent-b "$BIN/agent" --config "$CONFIGS/agent-b.yaml" --host "$HOST" --port "$AGENT_B_PORT"
START_ENV=("MCP_FILESYSTEM_TOKEN=$FILESYSTEM_TOKEN")
start agent-c "$BIN/agent" --config "$CONFIGS/agent-c.yaml" --host "$HOST" --port "$AGENT_C_PORT"
healthy agent-b "$(local_url "$AGENT_B_PORT")/health"
healthy agent-c "$(local_url "$AGENT_C_PORT")/health"

start agent-a "$BIN/agent" --config "$CONFIGS/agent-a.yaml" --host "$HOST" --port "$AGENT_A_PORT" \
  --web-chat-url "$(local_url "$WEB_PORT")/"
healthy agent-a "$(local_url "$AGENT_A_PORT")/health"

start web "$BIN/web" --config "$CONFIGS/web.yaml" --host "$HOST" --port "$WEB_PORT" \
  --agent-url "$(local_url "$AGENT_A_PORT")" --dist-dir "$DIST"
healthy web "$(local_url "$WEB_PORT")/web/health"

cat <<EOF

  Web chat:        $(local_url "$WEB_PORT")/
  agent-a:         $(local_url "$AGENT_A_PORT")/   orchestrator (docs: /docs)
  agent-b:         $(local_url "$AGENT_B_PORT")/   resources
  agent-c:         $(local_url "$AGENT_C_PORT")/   files (root "workspace": $STATE/data/workspace)
  mcp-resources:   $(local_url "$MCP_RESOURCES_PORT")/mcp   (service token required)
  mcp-filesystem:  $(local_url "$MCP_FILESYSTEM_PORT")/mcp   (service token required)
  Model:           ${AGENT_MODEL:-offline (scripted rules in config/compose)}
  Logs:            $LOGS
  Try:             add resource web-1 with value 42  /  write file notes.txt with content hello

Stack ready. Ctrl-C stops it.
EOF

# Runs until a signal (the traps stop everything) or until a process dies
# (checked every second; `wait` returns at once when a signal comes).
while true; do
  sleep 1 &
  wait $! || true
  for i in "${!PIDS[@]}"; do
    if [ "$STOPPING" = no ] && ! kill -0 "${PIDS[i]}" 2>/dev/null; then
      echo "stack.sh: ${NAMES[i]} exited; the end of $LOGS/${NAMES[i]}.log:" >&2
      tail -n 20 "$LOGS/${NAMES[i]}.log" >&2 || true
      exit 1
    fi
  done
done
