# Part 3 of scripts/test-docker.sh, the compose stack: docker-compose.yaml
# with tests/docker/compose.host-network.yaml (every service on the host
# network, free ports, read-only root filesystems), driven end to end by
# tests/docker/drive_stack.py, then `down` and `up` again on the same
# volumes and driven again.
#
# Published ports cannot go with the host network, and an override can
# only add to a list (Compose v2's `!reset` is not in Debian's 1.29): the
# stack runs from a copy of docker-compose.yaml without its `ports:`
# entries, everything else as written.

PROJECT=asg-packaging-test
STACK_FILE=$WORK/docker-compose.no-ports.yaml

compose() {
  "${COMPOSE[@]}" -p "$PROJECT" --project-directory "$ROOT" -f "$STACK_FILE" \
    -f tests/docker/compose.host-network.yaml "$@"
}

# docker-compose.yaml without `ports:` (read with PyYAML, which Debian's
# docker-compose depends on).
write_stack_file() {
  python3 - docker-compose.yaml "$STACK_FILE" <<'PY'
import sys, yaml
stack = yaml.safe_load(open(sys.argv[1]))
for name, service in stack["services"].items():
    assert service.get("ports"), f"{name} publishes no port"
    del service["ports"]
yaml.safe_dump(stack, open(sys.argv[2], "w"), sort_keys=False)
PY
}

test_compose_stack() {
  step "compose stack (docker-compose.yaml + tests/docker/compose.host-network.yaml)"
  local ports
  mapfile -t ports < <(free_ports 6)
  export ASG_IMAGE=$IMAGE ASG_WEB_PORT=${ports[0]} ASG_AGENT_A_PORT=${ports[1]} \
    ASG_AGENT_B_PORT=${ports[2]} ASG_AGENT_C_PORT=${ports[3]} \
    ASG_MCP_RESOURCES_PORT=${ports[4]} ASG_MCP_FILESYSTEM_PORT=${ports[5]}
  # Fresh service tokens, given to the stack only through the environment.
  MCP_RESOURCES_TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
  MCP_FILESYSTEM_TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
  export MCP_RESOURCES_TOKEN MCP_FILESYSTEM_TOKEN
  unset GEMINI_API_KEY ANTHROPIC_API_KEY OPENAI_API_KEY AGENT_MODEL
  write_stack_file
  remove_compose_stack
  local state=$WORK/stack-state.json
  start_stack "first start"
  python3 tests/docker/drive_stack.py before-restart "$state" || { stack_logs; fail "the stack (first start)"; }
  compose down >/dev/null 2>&1 || fail "docker compose down failed"
  ok "compose down (the volumes stay)"
  start_stack "restart on the same volumes"
  python3 tests/docker/drive_stack.py after-restart "$state" || { stack_logs; fail "the stack (after the restart)"; }
  no_token_in_logs
}

# up -d, then every service healthy (compose's own health checks).
start_stack() {
  local started=$SECONDS
  compose up -d --no-build >"$WORK/compose-up.log" 2>&1 || { cat "$WORK/compose-up.log" >&2; stack_logs; fail "compose up ($1)"; }
  local deadline=$((SECONDS + 120)) service unhealthy
  while :; do
    unhealthy=""
    for service in mcp-resources mcp-filesystem agent-b agent-c agent-a web; do
      [ "$(container_health "$service")" = healthy ] || unhealthy+="$service "
    done
    [ -z "$unhealthy" ] && break
    [ $SECONDS -lt $deadline ] || { stack_logs; fail "not healthy after 120 s ($1): $unhealthy"; }
    sleep 1
  done
  ok "all six services healthy ($1, $((SECONDS - started)) s)"
}

container_health() {
  local id
  id=$(compose ps -q "$1" 2>/dev/null) || return 0
  [ -n "$id" ] || return 0
  "${DOCKER[@]}" inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null || true
}

stack_logs() {
  echo "---- compose logs (last lines) ----" >&2
  compose logs --no-color --tail=40 >&2 2>&1 || true
}

# The service tokens reach the services only through their environment:
# no service logs them.
no_token_in_logs() {
  if compose logs --no-color 2>&1 | grep -q -e "$MCP_RESOURCES_TOKEN" -e "$MCP_FILESYSTEM_TOKEN"; then
    fail "a service token appears in the stack's logs"
  fi
  ok "no service token in the stack's logs"
}

remove_compose_stack() {
  [ -n "${COMPOSE:-}" ] || return 0
  compose down -v --remove-orphans >/dev/null 2>&1 || true
}
