# Part 1 of scripts/test-docker.sh: the release archive for this machine's
# target, as a user gets it: checksum, unpack, `bin/agent --version`, and
# the demo config served from the unpacked directory. Sets PACKAGE_DIR
# (the unpacked archive), which the image is built from.
#
# Which binaries go in (ASG_PACKAGING_PROFILE): `debug` (default) packs
# the ones the tests just built (target/debug; `cargo build` first, a
# no-op after the tests), so a fresh machine does not compile everything
# a second time; `release` builds release binaries as a real release does.

test_release_archive() {
  local profile=${ASG_PACKAGING_PROFILE:-debug} bin_dir=""
  step "release archive ($HOST_TARGET, scripts/release.sh, $profile binaries)"
  case $profile in
    debug)
      cargo build --quiet --locked -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server -p asg-cli --bins
      bin_dir=$ROOT/target/debug
      ;;
    release) ;;
    *) fail "ASG_PACKAGING_PROFILE must be debug or release, not '$profile'" ;;
  esac
  local out=$WORK/dist
  rm -rf "$out"
  RELEASE_TARGETS=native RELEASE_OUT=$out RELEASE_INSTALL=0 RELEASE_STRICT=1 RELEASE_BIN_DIR=$bin_dir \
    bash scripts/release.sh
  (cd "$out" && sha256sum --quiet -c "$PACKAGE.tar.gz.sha256") || fail "the archive does not match its .sha256"
  ok "$PACKAGE.tar.gz matches its checksum ($(human_size "$(stat -c %s "$out/$PACKAGE.tar.gz")"))"

  rm -rf "$WORK/unpacked"
  mkdir -p "$WORK/unpacked"
  tar -C "$WORK/unpacked" -xzf "$out/$PACKAGE.tar.gz"
  PACKAGE_DIR=$WORK/unpacked/$PACKAGE
  local bin version
  for bin in agent web mcp-resources mcp-filesystem asg; do
    version=$("$PACKAGE_DIR/bin/$bin" --version)
    [ "$version" = "$bin $VERSION" ] || fail "bin/$bin --version printed '$version', not '$bin $VERSION'"
  done
  ok "bin/agent --version: agent $VERSION (and the same for web, mcp-resources, mcp-filesystem, asg)"
  serve_demo_from_archive
}

# The demo config from the unpacked archive, with its own tool server
# (bin/mcp-resources beside bin/agent): healthy, and one turn lists
# resources through it.
serve_demo_from_archive() {
  local port log pid health answer
  port=$(free_ports 1)
  log=$WORK/release-demo.log
  (cd "$PACKAGE_DIR" && exec bin/agent --config config/demo.yaml --port "$port" \
    --data-dir "$WORK/release-demo-data") >"$log" 2>&1 &
  pid=$!
  if ! wait_for_url "http://127.0.0.1:$port/health" 30; then
    kill "$pid" 2>/dev/null || true
    cat "$log" >&2
    fail "the demo config from the archive did not answer /health"
  fi
  health=$(curl -s "http://127.0.0.1:$port/health")
  answer=$(curl -s -X POST "http://127.0.0.1:$port/conversations" \
    -H 'content-type: application/json' -d '{"message": "list resources"}')
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$WORK/release-demo-data"
  python3 - "$health" "$answer" <<'PY' || fail "the demo from the archive is not healthy or cannot run its tool"
import json, sys
health, answer = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert health["status"] == "ok" and "store" in health["details"], health
servers = health["details"]["mcp_servers"]
assert servers and all(s["status"] == "ready" and s["tools"] > 0 for s in servers), servers
results = [m["tool_result"] for m in answer["conversation"]["messages"] if m.get("tool_result")]
assert [r["name"] for r in results] == ["resources_list"] and not results[0]["is_error"], answer
assert "0 resources" in answer["result"]["response"], answer
PY
  ok "config/demo.yaml runs from the unpacked archive: /health ok, a turn used bin/mcp-resources"
}
