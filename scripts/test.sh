#!/usr/bin/env bash
# Sets up what the tests need and runs all of them: format, lints, unit,
# router and black-box scenario tests. This is the README's test command
# and what CI runs (.ci/run).
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

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --all-targets -- -D warnings

step "shared types build for wasm32 (the web chat uses them)"
cargo build --quiet -p asg-shared --target wasm32-unknown-unknown

step "A2A Python SDK for the interop test (tests/tests/a2a_interop.rs)"
A2A_SDK_VERSION=1.3.0
if python3 -c "import importlib.metadata as m, a2a, sys; sys.exit(m.version('a2a-sdk') != '${A2A_SDK_VERSION}')" 2>/dev/null; then
  echo "a2a-sdk ${A2A_SDK_VERSION} already installed"
else
  python3 -m pip install --quiet --disable-pip-version-check "a2a-sdk[http-server]==${A2A_SDK_VERSION}"
fi

step "cargo test (unit, router and scenario tests)"
cargo test
