#!/usr/bin/env bash
# Packaging tests, run by scripts/test.sh after the other tests:
#
#   1. the release archive (scripts/release.sh, this machine's target):
#      unpacked, `bin/agent --version`, and the demo config served from it
#      (GET /health, one turn with the bundled mcp-resources);
#   2. the Kubernetes manifests (deploy/kubernetes) against the
#      Kubernetes API schemas (kubernetes-validate, strict), and the agent
#      config inside the ConfigMap (`agent check`);
#   3. when Docker can run here: the image, built from that release
#      archive (ARTEFACTS=prebuilt: nothing is compiled again) on a Debian
#      bookworm base made offline with debootstrap; checked (non-root, only
#      what it needs, its size, read-only root filesystem, a clear exit on
#      a bad config); then the compose stack (docker-compose.yaml plus
#      tests/docker/compose.host-network.yaml: host network, free ports)
#      driven end to end by tests/docker/drive_stack.py, stopped with
#      `down`, started again on the same volumes and driven again.
#
# Docker: uses a running engine; otherwise installs Debian's docker.io
# (apt-get, when missing) and starts `dockerd --bridge=none` (no container
# network, only the host's loopback), stopped again at the end. Where the
# engine cannot run (not root, no apt-get, the sandbox refuses it) part 3
# is skipped with the reason, and parts 1 and 2 still run.
#
# Environment: ASG_DOCKER=0 skips part 3 (says so); ASG_DOCKER=1 makes a
# skip of part 3 an error. ASG_DOCKER_KEEP=1 leaves the stack, its volumes
# and the image in place for a look after a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=$ROOT/target/packaging-test
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
HOST_TARGET=$(rustc -vV | sed -n 's/^host: //p')
PACKAGE=agent-stop-and-go-$VERSION-$HOST_TARGET
mkdir -p "$WORK"

for part in common release-archive kubernetes docker-engine docker-image docker-stack; do
  # shellcheck source=/dev/null
  . "scripts/packaging/$part.sh"
done

test_release_archive
test_kubernetes_manifests
if docker_engine_ready; then
  trap stop_what_we_started EXIT
  build_test_image
  test_image
  test_compose_stack
fi
