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
cargo clippy --workspace --all-targets -- -D warnings

step "shared types build for wasm32 (the web chat uses them)"
cargo build --quiet -p asg-shared --target wasm32-unknown-unknown

step "cargo test (unit, router and scenario tests)"
cargo test --workspace
