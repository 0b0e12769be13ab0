#!/usr/bin/env bash
# Sets up what the tests need and runs all of them: format, lints, unit,
# router, black-box scenario tests, the A2A SDK interop test, the web
# chat's wasm build and its browser tests. This is the README's test
# command and what CI runs (.ci/run). Every set-up step is skipped when
# its tool is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain components"
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^${component}"; then
    rustup component add "$component"
  fi
done
if ! rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$'; then
  rustup target add wasm32-unknown-unknown
fi

step "system packages for the browser tests (Debian chromium, chromium-driver, binaryen)"
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
command -v wasm-opt >/dev/null 2>&1 || missing+=(binaryen)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

step "A2A Python SDK for the interop test (tests/tests/a2a_interop.rs)"
A2A_SDK_VERSION=1.3.0
if python3 -c "import importlib.metadata as m, a2a, sys; sys.exit(m.version('a2a-sdk') != '${A2A_SDK_VERSION}')" 2>/dev/null; then
  echo "a2a-sdk ${A2A_SDK_VERSION} already installed"
else
  python3 -m pip install --quiet --disable-pip-version-check "a2a-sdk[http-server]==${A2A_SDK_VERSION}"
fi

# The server side of the interop test needs the v0.3 SDK (the 1.x SDK
# serves protocol v1.0), kept apart in a venv under target/.
A2A_SERVER_SDK_VERSION=0.3.26
venv=target/a2a-sdk-v03
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('a2a-sdk') != '${A2A_SERVER_SDK_VERSION}')" 2>/dev/null; then
  mkdir -p target
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "a2a-sdk[http-server]==${A2A_SERVER_SDK_VERSION}" uvicorn
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --all-targets -- -D warnings
cargo clippy -p asg-end2end --all-targets -- -D warnings
cargo clippy -p asg-web --target wasm32-unknown-unknown -- -D warnings

step "shared types build for wasm32 (the web chat uses them)"
cargo build --quiet -p asg-shared --target wasm32-unknown-unknown

step "web chat bundle (trunk, wasm-bindgen, wasm-opt)"
bash scripts/build-web.sh

step "cargo test (unit, router and scenario tests)"
cargo test

step "web chat logic tests"
cargo test -p asg-web --lib

step "browser tests (headless Chromium against the real binaries)"
cargo test -p asg-end2end -- --test-threads=2
