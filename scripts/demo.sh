#!/usr/bin/env bash
# Builds and runs the keyless demo: the resource manager agent on the
# offline scripted model (with the mcp-resources tool server) and the web
# chat in front of it. Ctrl-C stops both.
#
#   ./scripts/demo.sh                           # agent on 8080, chat on 3000
#   ./scripts/demo.sh --port 8180 --web-port 3100
#   DEMO_PORT=8180 DEMO_WEB_PORT=3100 ./scripts/demo.sh
#
# Both listen on 127.0.0.1 only. A port already taken stops the script
# before anything starts. The chat bundle is rebuilt only when a file of
# the chat (web/, shared/) or Cargo.lock changed since the last build.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${DEMO_PORT:-8080}
WEB_PORT=${DEMO_WEB_PORT:-3000}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() {
  echo "demo: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case $1 in
    --port) PORT=${2:-}; shift 2 || die "--port needs a number" ;;
    --web-port) WEB_PORT=${2:-}; shift 2 || die "--web-port needs a number" ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
done

for pair in "--port:$PORT" "--web-port:$WEB_PORT"; do
  value=${pair#*:}
  if ! [[ $value =~ ^[0-9]+$ ]] || [ "$value" -lt 1 ] || [ "$value" -gt 65535 ]; then
    die "${pair%%:*} must be a port number from 1 to 65535, not '$value'"
  fi
done
[ "$PORT" != "$WEB_PORT" ] || die "the agent and the chat need two different ports (both are $PORT)"
command -v curl >/dev/null 2>&1 || die "curl is needed (Debian: apt-get install curl)"

# True when something answers on 127.0.0.1:PORT.
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$PORT" "$WEB_PORT"; do
  if port_taken "$port"; then
    die "port $port on 127.0.0.1 is already in use (another demo, or another program).
      Stop it, or choose free ports: ./scripts/demo.sh --port N --web-port M"
  fi
done

cargo build --release -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server --bins

# The chat bundle, unless web/dist is newer than every file it is built from
# (and has the compressed copies build-web.sh writes since 2026-12-01).
bundle_is_current() {
  [ -f web/dist/index.html ] && [ -f web/dist/index.html.gz ] || return 1
  [ -z "$(find web shared Cargo.lock Cargo.toml -path web/dist -prune -o -type f \
    -newer web/dist/index.html -print -quit)" ]
}
if bundle_is_current; then
  echo "The chat bundle in web/dist is up to date."
else
  bash scripts/build-web.sh
fi

./target/release/agent --config config/demo.yaml --port "$PORT" \
  --web-chat-url "http://127.0.0.1:$WEB_PORT/" &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null' EXIT INT TERM
healthy=""
for _ in $(seq 1 300); do
  kill -0 "$agent" 2>/dev/null || die "the agent stopped (its message is above)"
  if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
    healthy=1
    break
  fi
  sleep 0.1
done
[ -n "$healthy" ] || die "the agent did not answer http://127.0.0.1:$PORT/health within 30 s"
echo
echo "  Web chat:   http://127.0.0.1:$WEB_PORT/"
echo "  Agent API:  http://127.0.0.1:$PORT/   (interactive docs: http://127.0.0.1:$PORT/docs)"
echo "  Try:        list resources  /  add resource web-1 with value 42"
echo
./target/release/web --config config/web.yaml --port "$WEB_PORT" --agent-url "http://127.0.0.1:$PORT"
