#!/usr/bin/env bash
# Builds release archives of the five binaries (agent, mcp-resources,
# mcp-filesystem, web, and the terminal client asg) for each target the installed toolchains can build,
# and says which it skipped and why.
#
#   ./scripts/release.sh                       # linux/amd64 and linux/arm64 (+ macOS on a Mac)
#   RELEASE_TARGETS=native ./scripts/release.sh   # only this machine's target
#   RELEASE_TARGETS="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu" ./scripts/release.sh
#
# Each target gives dist/agent-stop-and-go-VERSION-TARGET.tar.gz and its
# .sha256 (`sha256sum -c` format). An archive holds bin/ (the binaries,
# debug info stripped; symbols kept for backtraces), web/dist (the chat
# bundle, built by scripts/build-web.sh when missing), config/,
# testdata/scripted/ (the offline model's rules), docker-compose.yaml,
# README.md and ARCHITECTURE.md: `bin/agent --config config/demo.yaml`
# runs from the unpacked directory.
#
# Cross builds for Linux need the Rust target (`rustup target add`, tried
# when missing) and a C cross compiler for the bundled C code (SQLite,
# aws-lc): gcc-aarch64-linux-gnu / gcc-x86-64-linux-gnu from Debian,
# installed with apt-get when missing (RELEASE_INSTALL=0: never install).
# macOS targets build only on macOS (no Apple SDK elsewhere).
#
# Environment: RELEASE_TARGETS (see above), RELEASE_OUT (default dist),
# RELEASE_INSTALL (default 1), RELEASE_STRICT=1 (a skipped target fails
# the run), RELEASE_BUNDLE=0 (no chat bundle in the archives),
# RELEASE_BIN_DIR=DIR (package the binaries already in DIR, e.g.
# target/debug after the tests, instead of building release ones; this
# machine's target only: scripts/test-docker.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
OUT=${RELEASE_OUT:-$ROOT/dist}
INSTALL=${RELEASE_INSTALL:-1}
BINARIES=(agent mcp-resources mcp-filesystem web asg)
HOST_TARGET=$(rustc -vV | sed -n 's/^host: //p')
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

say() { printf '\n==> %s\n' "$*"; }

if [ -z "${RELEASE_TARGETS:-}" ]; then
  TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)
  if [ "$(uname -s)" = Darwin ]; then
    TARGETS+=(x86_64-apple-darwin aarch64-apple-darwin)
  fi
else
  read -r -a TARGETS <<<"${RELEASE_TARGETS//native/$HOST_TARGET}"
fi

BUILT=()
SKIPPED=()
skip() {
  SKIPPED+=("$1: $2")
  echo "    skipped: $2"
}

apt_install() {
  [ "$INSTALL" = 1 ] && command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo=sudo
  fi
  echo "    installing $* (apt-get)"
  { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; } >/dev/null
}

# The Rust standard library for a target.
ensure_rust_target() {
  local target=$1
  rustup target list --installed 2>/dev/null | grep -qx "$target" && return 0
  [ "$INSTALL" = 1 ] || return 1
  echo "    adding the Rust target $target (rustup)"
  rustup target add "$target" >/dev/null 2>&1
}

# Cross-compiling environment for a Linux target on another architecture:
# the C compiler for the bundled C code and the linker. Sets CROSS_PREFIX.
ensure_linux_cross() {
  local target=$1 arch=${1%%-*} package
  case $arch in
    aarch64) CROSS_PREFIX=aarch64-linux-gnu package=gcc-aarch64-linux-gnu ;;
    x86_64) CROSS_PREFIX=x86_64-linux-gnu package=gcc-x86-64-linux-gnu ;;
    *) return 1 ;;
  esac
  command -v "$CROSS_PREFIX-gcc" >/dev/null 2>&1 || apt_install "$package" || return 1
  command -v "$CROSS_PREFIX-gcc" >/dev/null 2>&1
}

# build TARGET: the binaries for TARGET; prints the directory they are in.
# The host target builds without --target, so it shares target/dist
# with scripts/bench.sh (the workspace's `dist` profile: release with
# whole-program LTO, see Cargo.toml).
build() {
  local target=$1 var
  if [ -n "${RELEASE_BIN_DIR:-}" ]; then
    [ "$target" = "$HOST_TARGET" ] || { echo "    RELEASE_BIN_DIR holds $HOST_TARGET binaries, not $target" >&2; return 1; }
    for var in "${BINARIES[@]}"; do
      [ -x "$RELEASE_BIN_DIR/$var" ] || { echo "    $RELEASE_BIN_DIR/$var is missing" >&2; return 1; }
    done
    echo "    packaging the binaries in $RELEASE_BIN_DIR as they are" >&2
    (cd "$RELEASE_BIN_DIR" && pwd)
    return
  fi
  if [ "$target" = "$HOST_TARGET" ]; then
    cargo build --profile dist --locked -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server -p asg-cli --bins >&2 || return 1
    echo "$TARGET_DIR/dist"
    return
  fi
  var=$(echo "$target" | tr 'a-z-' 'A-Z_')
  if [ -n "${CROSS_PREFIX:-}" ]; then
    env "CARGO_TARGET_${var}_LINKER=$CROSS_PREFIX-gcc" \
      "CC_${target//-/_}=$CROSS_PREFIX-gcc" \
      "AR_${target//-/_}=$CROSS_PREFIX-ar" \
      cargo build --profile dist --locked -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server -p asg-cli --bins --target "$target" >&2 || return 1
  else
    cargo build --profile dist --locked -p asg-server -p asg-mcp-resources -p asg-mcp-filesystem -p asg-web-server -p asg-cli --bins --target "$target" >&2 || return 1
  fi
  echo "$TARGET_DIR/$target/dist"
}

# The chat bundle is the same for every target.
BUNDLE=""
if [ "${RELEASE_BUNDLE:-1}" = 1 ]; then
  if [ ! -f web/dist/index.html ]; then
    say "building the chat bundle (scripts/build-web.sh)"
    bash scripts/build-web.sh || true
  fi
  if [ -f web/dist/index.html ]; then
    BUNDLE=$ROOT/web/dist
  else
    SKIPPED+=("chat bundle: scripts/build-web.sh failed; archives have no web/dist")
  fi
fi

mkdir -p "$OUT"
for target in "${TARGETS[@]}"; do
  say "$target"
  CROSS_PREFIX=""
  case $target in
    *-apple-darwin)
      if [ "$(uname -s)" != Darwin ]; then
        skip "$target" "macOS targets need Apple's SDK and linker (build on a Mac)"
        continue
      fi
      ;;
    *-linux-gnu)
      if [ "$target" != "$HOST_TARGET" ] && ! ensure_linux_cross "$target"; then
        skip "$target" "no C cross compiler for $target (install ${CROSS_PREFIX:-one}-gcc, e.g. Debian's gcc-${target%%-*}-linux-gnu; RELEASE_INSTALL=$INSTALL)"
        continue
      fi
      ;;
  esac
  if [ "$target" != "$HOST_TARGET" ] && ! ensure_rust_target "$target"; then
    skip "$target" "the Rust target is not installed and 'rustup target add $target' failed (offline?)"
    continue
  fi
  if ! dir=$(build "$target"); then
    skip "$target" "cargo build failed (see above)"
    continue
  fi

  name=agent-stop-and-go-$VERSION-$target
  stage=$OUT/$name
  rm -rf "$stage"
  mkdir -p "$stage/bin" "$stage/testdata"
  strip_tool="strip"
  [ -z "$CROSS_PREFIX" ] || strip_tool=$CROSS_PREFIX-strip
  for bin in "${BINARIES[@]}"; do
    cp "$dir/$bin" "$stage/bin/"
    if command -v "$strip_tool" >/dev/null 2>&1; then
      "$strip_tool" --strip-debug "$stage/bin/$bin"
    fi
  done
  cp -R config "$stage/config"
  cp -R testdata/scripted "$stage/testdata/scripted"
  cp README.md ARCHITECTURE.md docker-compose.yaml "$stage/"
  if [ -n "$BUNDLE" ]; then
    mkdir -p "$stage/web"
    cp -R "$BUNDLE" "$stage/web/dist"
  fi
  tar -C "$OUT" -czf "$OUT/$name.tar.gz" "$name"
  rm -rf "$stage"
  (cd "$OUT" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
  BUILT+=("$target")
  echo "    $OUT/$name.tar.gz"
done

say "summary (version $VERSION, in $OUT)"
human() { numfmt --to=iec-i --suffix=B "$1" 2>/dev/null || echo "$1 bytes"; }
for target in "${BUILT[@]}"; do
  archive=$OUT/agent-stop-and-go-$VERSION-$target.tar.gz
  printf '  built    %-28s %s  sha256 %s\n' "$target" "$(human "$(stat -c %s "$archive")")" \
    "$(cut -d' ' -f1 "$archive.sha256")"
  tar -tvzf "$archive" | awk '$6 ~ /\/bin\/./ { printf "             %-40s %s\n", $6, $3 }'
done
for line in "${SKIPPED[@]}"; do
  printf '  skipped  %s\n' "$line"
done
if [ ${#BUILT[@]} -eq 0 ]; then
  echo "nothing was built" >&2
  exit 1
fi
if [ "${RELEASE_STRICT:-0}" = 1 ] && [ ${#SKIPPED[@]} -gt 0 ]; then
  exit 1
fi
