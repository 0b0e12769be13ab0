#!/usr/bin/env bash
# Fails when a crate dependency points the wrong way. Dependencies point
# downward only (ARCHITECTURE.md, "Crates"):
#
#   asg-shared                      plain data, none of our crates
#   asg-core   asg-http             the pure core; the HTTP edge
#   asg-tool-http                   MCP over HTTP for the tool servers
#   asg-server (agent)  asg-mcp-resources  asg-mcp-filesystem  asg-web-server
#
# Checked on normal dependencies, transitively (`cargo tree -e normal`):
# - asg-web-server (the `web` binary) links no sqlx, rusqlite, rmcp or
#   cap-std: it is a proxy with a session, not a store or a tool server;
# - asg-core uses no tokio or reqwest: it decides, it does no I/O;
# - asg-shared depends on none of our crates;
# - asg-http and asg-tool-http, shared by the binaries, depend on no
#   binary's crate;
# - no product crate (tool servers, web server) depends on asg-server, the
#   agent;
# - asg-cli (the `asg` terminal client) depends on no crate of ours but
#   asg-shared: it speaks to the agent over REST only.
#
# Usage: scripts/check-deps.sh (from anywhere; scripts/test.sh runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

failures=0

# tree PACKAGE: "name version [(path)]" of every package PACKAGE depends on
# through normal dependencies, transitively, each once.
tree() {
  cargo tree --quiet --edges normal --package "$1" --prefix none --format '{p}' \
    | sed 1d | sed 's/ (\*)$//' | sort -u
}

# fail PACKAGE DEPENDENCY WHY: reports the dependency with the way it
# comes in (an inverted tree from the dependency up to PACKAGE).
fail() {
  local package=$1 dependency=$2 why=$3
  failures=$((failures + 1))
  echo "check-deps: FAIL: $package depends on $dependency: $why" >&2
  echo "  how (cargo tree -e normal -p $package -i $dependency):" >&2
  cargo tree --quiet --edges normal --package "$package" --invert "$dependency" 2>&1 \
    | sed 's/^/    /' >&2 || true
}

# forbid PACKAGE WHY DEPENDENCY...: PACKAGE must not depend on any of them.
forbid() {
  local package=$1 why=$2
  shift 2
  local deps
  deps=$(tree "$package" | awk '{print $1}')
  for dependency in "$@"; do
    if grep -qx -- "$dependency" <<<"$deps"; then
      fail "$package" "$dependency" "$why"
    fi
  done
}

# forbid_ours PACKAGE WHY: PACKAGE must not depend on any crate of this
# workspace (a path dependency under the repository).
forbid_ours() {
  local package=$1 why=$2 dependency
  while read -r dependency; do
    [ -n "$dependency" ] && fail "$package" "$dependency" "$why"
  done < <(tree "$package" | grep -F "($root/" | awk '{print $1}')
}

# only_ours PACKAGE WHY ALLOWED...: of this workspace's crates, PACKAGE
# depends on ALLOWED only.
only_ours() {
  local package=$1 why=$2 dependency
  shift 2
  while read -r dependency; do
    [ -z "$dependency" ] && continue
    printf '%s\n' "$@" | grep -qx -- "$dependency" || fail "$package" "$dependency" "$why"
  done < <(tree "$package" | grep -F "($root/" | awk '{print $1}')
}

forbid asg-web-server \
  "the \`web\` binary is a proxy with a session: it must not link the store (sqlx, rusqlite), MCP (rmcp) or the filesystem sandbox (cap-std); move what it needs into asg-http" \
  sqlx rusqlite rmcp cap-std
forbid asg-core \
  "asg-core decides and does no I/O: no async runtime (tokio) and no HTTP client (reqwest); the server carries out its effects" \
  tokio reqwest
forbid_ours asg-shared \
  "asg-shared is the bottom of the graph (plain wire and conversation types, built for wasm32): it depends on none of our crates"
for shared in asg-http asg-tool-http; do
  forbid "$shared" \
    "$shared is shared by the binaries, so it sits below them: it must not depend on a binary's crate" \
    asg-server asg-mcp-resources asg-mcp-filesystem asg-web-server
done
for product in asg-mcp-resources asg-mcp-filesystem asg-web-server; do
  forbid "$product" \
    "a product crate must not depend on the agent (asg-server); move what both need into asg-http (or asg-tool-http for the tool servers)" \
    asg-server
done

only_ours asg-cli \
  "the terminal client \`asg\` is a client of the agent's REST API: of our crates it uses only the wire types (asg-shared)" \
  asg-shared

if [ "$failures" -gt 0 ]; then
  echo "check-deps: $failures dependency rule(s) broken (see scripts/check-deps.sh)" >&2
  exit 1
fi
echo "check-deps: crate dependencies point downward"
