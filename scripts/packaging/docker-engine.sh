# Part 3 of scripts/test-docker.sh, the engine: a running Docker engine,
# or Debian's docker.io installed and `dockerd --bridge=none` started (no
# container network; containers use the host's loopback), and a compose
# client. Sets DOCKER and COMPOSE (commands as arrays) and STARTED_DOCKERD.
# Says why and returns 1 when part 3 cannot run here.

STARTED_DOCKERD=""

docker_engine_ready() {
  step "Docker engine"
  if [ "${ASG_DOCKER:-}" = 0 ]; then
    skip_docker "ASG_DOCKER=0"
    return 1
  fi
  local reason
  if ! reason=$(find_or_start_engine); then
    skip_docker "$reason"
    return 1
  fi
  [ -z "$reason" ] || echo "    $reason"
  [ -f "$WORK/dockerd.pid" ] && STARTED_DOCKERD=$(cat "$WORK/dockerd.pid")
  pick_docker_client
  if ! find_compose; then
    skip_docker "$COMPOSE_PROBLEM"
    return 1
  fi
  echo "    engine $("${DOCKER[@]}" version -f '{{.Server.Version}}'), client ${DOCKER[*]}, compose: ${COMPOSE[*]}"
}

skip_docker() {
  printf '\n  SKIPPED: the Docker image and compose stack tests: %s\n' "$1"
  if [ "${ASG_DOCKER:-}" = 1 ]; then
    fail "ASG_DOCKER=1 asks for the Docker tests, and they cannot run: $1"
  fi
}

# Prints what it did, or (exit 1) why no engine can run.
find_or_start_engine() {
  rm -f "$WORK/dockerd.pid"
  if docker info >/dev/null 2>&1; then
    echo "using the running engine"
    return 0
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    if ! apt_install docker.io >&2; then
      echo "no Docker engine, and Debian's docker.io could not be installed (needs apt-get and root or sudo)"
      return 1
    fi
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "no Docker engine runs, and starting dockerd needs root"
    return 1
  fi
  dockerd --bridge=none >"$WORK/dockerd.log" 2>&1 &
  echo $! >"$WORK/dockerd.pid"
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    if /usr/bin/docker info >/dev/null 2>&1 || docker info >/dev/null 2>&1; then
      echo "started dockerd --bridge=none (log: $WORK/dockerd.log)"
      return 0
    fi
    kill -0 "$(cat "$WORK/dockerd.pid")" 2>/dev/null || break
    sleep 0.5
  done
  stop_dockerd
  echo "dockerd did not start here: $(tail -n 3 "$WORK/dockerd.log" | tr '\n' ' ')"
  return 1
}

# A client that builds with BuildKit: `docker` when it has buildx (Docker
# 23+), else Debian's own client (20.10, BuildKit built in), which is
# also the one matching Debian's engine.
pick_docker_client() {
  DOCKER=(docker)
  if ! docker buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ]; then
    DOCKER=(/usr/bin/docker)
  fi
  export DOCKER_BUILDKIT=1
}

# `docker compose` (v2), else docker-compose (v1; Debian's, installed when
# missing). Sets COMPOSE, or COMPOSE_PROBLEM and returns 1.
find_compose() {
  if "${DOCKER[@]}" compose version >/dev/null 2>&1; then
    COMPOSE=("${DOCKER[@]}" compose)
    return 0
  fi
  if ! command -v docker-compose >/dev/null 2>&1 && ! apt_install docker-compose; then
    COMPOSE_PROBLEM="no compose client: neither 'docker compose' nor docker-compose, and Debian's docker-compose could not be installed"
    return 1
  fi
  COMPOSE=(docker-compose)
}

stop_dockerd() {
  local pid
  pid=$(cat "$WORK/dockerd.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  rm -f "$WORK/dockerd.pid"
}

# The EXIT trap: the stack, its volumes and the test image go (unless
# ASG_DOCKER_KEEP=1), then the engine when this script started it.
stop_what_we_started() {
  local status=$?
  if [ "${ASG_DOCKER_KEEP:-0}" != 1 ]; then
    remove_compose_stack
    remove_test_image
  fi
  if [ -n "$STARTED_DOCKERD" ]; then
    echo "    stopping the dockerd this test started"
    stop_dockerd
  fi
  return $status
}
