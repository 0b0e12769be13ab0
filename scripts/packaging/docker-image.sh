# Part 3 of scripts/test-docker.sh, the image: its Debian base made
# offline (debootstrap + docker import) when the engine lacks it, built
# from the unpacked release archive (ARTEFACTS=prebuilt), then checked.

IMAGE=asg-packaging-test:$VERSION
BASE_IMAGE=debian:bookworm-slim
DEBIAN_MIRROR=${ASG_DEBIAN_MIRROR:-http://deb.debian.org/debian}

build_test_image() {
  step "runtime image $IMAGE (Dockerfile, ARTEFACTS=prebuilt, from the release archive)"
  ensure_base_image
  mkdir -p "$PACKAGE_DIR/deploy"
  rm -rf "$PACKAGE_DIR/deploy/docker"
  cp -R deploy/docker "$PACKAGE_DIR/deploy/docker"
  # --network host: RUN steps get no container network (there is none);
  # the test's base already has ca-certificates, so nothing is fetched.
  "${DOCKER[@]}" build --quiet --network host --build-arg ARTEFACTS=prebuilt \
    --build-arg "RUNTIME_IMAGE=$BASE_IMAGE" -f Dockerfile -t "$IMAGE" "$PACKAGE_DIR" >/dev/null \
    || fail "docker build failed"
  ok "built $IMAGE"
}

# debian:bookworm-slim, or one made here: a minimal bookworm root
# filesystem from Debian's package mirror (debootstrap), imported. It stays
# in the engine for the next run.
ensure_base_image() {
  if "${DOCKER[@]}" image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    echo "    base image $BASE_IMAGE is in the engine"
    return
  fi
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap \
    || fail "debootstrap is needed to make $BASE_IMAGE offline"
  local rootfs=$WORK/rootfs started=$SECONDS
  rm -rf "$rootfs"
  echo "    making $BASE_IMAGE: debootstrap --variant=minbase bookworm from $DEBIAN_MIRROR"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$DEBIAN_MIRROR" \
    >"$WORK/debootstrap.log" 2>&1 || { tail -n 20 "$WORK/debootstrap.log" >&2; fail "debootstrap failed"; }
  # What a slim image leaves out: package lists, caches, docs, locales.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  tar -C "$rootfs" -c . | "${DOCKER[@]}" import -c 'CMD ["bash"]' \
    -m "debootstrap --variant=minbase bookworm (scripts/test-docker.sh)" - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs"
  ok "made $BASE_IMAGE in $((SECONDS - started)) s"
}

remove_test_image() {
  [ -n "${DOCKER:-}" ] || return 0
  "${DOCKER[@]}" rm -f asg-packaging-readonly >/dev/null 2>&1 || true
  "${DOCKER[@]}" volume rm -f asg-packaging-readonly-data >/dev/null 2>&1 || true
  "${DOCKER[@]}" image rm -f "$IMAGE" >/dev/null 2>&1 || true
}

test_image() {
  step "image checks"
  image_runs_as_non_root
  image_holds_only_what_it_needs
  image_runs_on_read_only_root
  image_refuses_bad_config
}

in_image() { "${DOCKER[@]}" run --rm --network none "$IMAGE" "$@"; }

image_runs_as_non_root() {
  local user uid
  user=$("${DOCKER[@]}" image inspect -f '{{.Config.User}}' "$IMAGE")
  uid=$(in_image id -u)
  [ -n "$user" ] && [ "$uid" != 0 ] || fail "the image runs as root (USER '$user', uid $uid)"
  ok "runs as user $user (uid $uid)"
}

image_holds_only_what_it_needs() {
  local bins app tools size base
  bins=$(in_image ls /usr/local/bin | tr '\n' ' ')
  [ "$bins" = "agent asg asg-healthcheck mcp-filesystem mcp-resources web " ] \
    || fail "/usr/local/bin holds '$bins', not the five binaries and asg-healthcheck"
  app=$(in_image ls /app | tr '\n' ' ')
  [ "$app" = "config data testdata web " ] || fail "/app holds '$app', not config data testdata web"
  in_image test -f /app/web/dist/index.html || fail "the chat bundle is not in /app/web/dist"
  tools=$(in_image bash -c 'for t in cargo rustc gcc cc curl wget git; do command -v $t; done' || true)
  [ -z "$tools" ] || fail "the image carries build or network tools: $tools"
  size=$("${DOCKER[@]}" image inspect -f '{{.Size}}' "$IMAGE")
  base=$("${DOCKER[@]}" image inspect -f '{{.Size}}' "$BASE_IMAGE")
  ok "only the binaries, bundle and configs: /usr/local/bin = $bins; /app = $app"
  ok "image size $(human_size "$size") ($(human_size $((size - base))) over its base $BASE_IMAGE, $(human_size "$base"))"
}

# The demo on a read-only root filesystem, writing only its data volume:
# healthy, its health check passes, a turn runs its stdio tool server.
image_runs_on_read_only_root() {
  local port answer
  port=$(free_ports 1)
  "${DOCKER[@]}" run -d --name asg-packaging-readonly --read-only --network host \
    -v asg-packaging-readonly-data:/app/data "$IMAGE" \
    agent --config config/demo.yaml --host 127.0.0.1 --port "$port" >/dev/null
  if ! wait_for_url "http://127.0.0.1:$port/health" 30; then
    "${DOCKER[@]}" logs asg-packaging-readonly >&2 || true
    fail "the demo did not become healthy on a read-only root filesystem"
  fi
  "${DOCKER[@]}" exec asg-packaging-readonly asg-healthcheck "http://127.0.0.1:$port/health" \
    || fail "asg-healthcheck fails against a healthy agent"
  answer=$(curl -s -X POST "http://127.0.0.1:$port/conversations" \
    -H 'content-type: application/json' -d '{"message": "add resource ro-1 with value 1"}')
  echo "$answer" | grep -q '"waiting_approval":true' \
    || fail "a turn on the read-only image did not stop for approval: $answer"
  "${DOCKER[@]}" exec asg-packaging-readonly asg-healthcheck "http://127.0.0.1:$port/nope" \
    && fail "asg-healthcheck passed on a 404"
  "${DOCKER[@]}" rm -f asg-packaging-readonly >/dev/null
  "${DOCKER[@]}" volume rm -f asg-packaging-readonly-data >/dev/null
  ok "read-only root filesystem plus the data volume: healthy, a turn ran its tool server and stopped for approval"
}

# An exit status of a refusal: not 0, not a timeout (124), not a signal.
exits_with_error() { [ "$1" != 0 ] && [ "$1" -lt 124 ]; }

# A missing config and an invalid one: a non-zero exit at once, with a
# message naming the file and the problem.
image_refuses_bad_config() {
  local output status
  printf 'name: bad\nllm:\n  modle: scripted:x.yaml\n' >"$WORK/bad-agent.yaml"
  set +e
  output=$(timeout 30 "${DOCKER[@]}" run --rm --network none -v "$WORK/bad-agent.yaml:/app/config/bad.yaml:ro" \
    "$IMAGE" agent --config config/bad.yaml 2>&1)
  status=$?
  set -e
  exits_with_error "$status" && [[ $output == *config/bad.yaml* ]] && [[ $output == *llm.modle* ]] \
    || fail "a bad config should fail naming the file and the field; got status $status: $output"
  ok "bad config: exit $status, '$(echo "$output" | tail -n 1)'"
  set +e
  output=$(timeout 30 "${DOCKER[@]}" run --rm --network none "$IMAGE" agent --config config/missing.yaml 2>&1)
  status=$?
  set -e
  exits_with_error "$status" && [[ $output == *config/missing.yaml* ]] \
    || fail "a missing config should fail naming the file; got status $status: $output"
  ok "missing config: exit $status, '$(echo "$output" | tail -n 1)'"
}
