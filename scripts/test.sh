#!/usr/bin/env bash
# Sets up what the tests need and runs all of them: format, lints, unit,
# router, black-box scenario tests, the A2A SDK interop tests (Python and
# Rust SDKs), the web chat's wasm build and its browser tests, and the
# packaging (release archive, Kubernetes manifests, Docker image and
# compose stack: scripts/test-docker.sh). This is the README's test
# command and what CI runs (.ci/run). Every set-up step is skipped when
# its tool is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# One clean build per run needs no incremental state (gigabytes in target/).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

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

apt_install() {
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

step "system packages for the browser and metrics tests (Debian chromium, chromium-driver, binaryen, prometheus)"
missing=()
[ -x /usr/bin/prometheus ] || missing+=(prometheus)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
command -v wasm-opt >/dev/null 2>&1 || missing+=(binaryen)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

step "Python venvs with the A2A SDKs for the interop tests (tests/tests/a2a_interop.rs)"
# Debian 12 refuses pip installs into the system Python
# (externally-managed-environment): both SDKs live in venvs under target/.
# `python3 -m venv` needs ensurepip, which Debian ships in python3-venv.
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
  apt_install python3 python3-venv
fi
# sdk_venv DIR VERSION [EXTRA PACKAGES...]: a venv with a2a-sdk==VERSION
# (shared with scripts/bench.sh, whose a2a-sdk anchor uses the v0.3 venv).
# shellcheck source=scripts/a2a-sdk-venv.sh
. scripts/a2a-sdk-venv.sh
# The clients (tests/interop/a2a_sdk_client.py, a2a_sdk_v1_client.py) and
# the v1.0 asking sub-agent (a2a_sdk_v1_asking_server.py, on uvicorn) use
# SDK 1.3.0.
sdk_venv target/a2a-sdk-v1 1.3.0 uvicorn
# The server side (a2a_sdk_server.py) needs the v0.3 SDK (the 1.x SDK
# serves protocol v1.0).
sdk_venv target/a2a-sdk-v03 0.3.26 uvicorn

step "Python venv with aiosmtpd for the email approval tests (tests/tests/email.rs)"
# A real SMTP server (tests/smtp/sink.py) in target/smtp-venv.
bash scripts/smtp-venv.sh

step "npm packages of the OpenID Connect test provider (tests/oidc, oidc-provider)"
# The auth tests start a real OpenID Connect provider: tests/oidc/provider.js
# on the machine's Node (>= 20.18). `npm ci` installs exactly the committed
# lock file; a hash of it in node_modules says the install is current.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' 2>/dev/null; then
  echo "Node.js >= 20.18 is needed for tests/oidc and tests/interop-js (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
# npm_ci DIR PACKAGE: `npm ci` in DIR unless node_modules/PACKAGE is there
# and installed from the current package-lock.json.
npm_ci() {
  local dir=$1 package=$2 lock_hash
  lock_hash=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ -d "$dir/node_modules/$package" ] \
    && [ "$(cat "$dir/node_modules/.asg-lock-sha256" 2>/dev/null)" = "$lock_hash" ]; then
    echo "$dir/node_modules is up to date"
  else
    (cd "$dir" && npm ci --no-audit --no-fund)
    echo "$lock_hash" > "$dir/node_modules/.asg-lock-sha256"
  fi
}
npm_ci tests/oidc oidc-provider

step "npm packages of the A2A JavaScript SDK interop tests (tests/interop-js, @a2a-js/sdk)"
# tests/tests/a2a_v1_js.rs runs the SDK's v1.0 client against the agent;
# tests/tests/a2a_asking_sdk.rs its server side (an asking sub-agent, with
# express).
npm_ci tests/interop-js @a2a-js/sdk

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --all-targets -- -D warnings
cargo clippy -p asg-end2end --all-targets -- -D warnings
cargo clippy -p asg-web --target wasm32-unknown-unknown -- -D warnings

step "crate dependencies point downward (scripts/check-deps.sh)"
bash scripts/check-deps.sh

step "shared types build for wasm32 (the web chat uses them)"
cargo build --quiet -p asg-shared --target wasm32-unknown-unknown

step "web chat bundle (trunk, wasm-bindgen, wasm-opt)"
bash scripts/build-web.sh

step "the official Rust A2A SDK as an interop peer (tests/interop-rust into target/interop-rust)"
# A Cargo project of its own, outside the workspace, with its committed
# lock file: a client and an asking sub-agent on a2a-client-lf and
# a2a-server-lf, run by tests/tests/a2a_v1_rust_sdk.rs (and our client's
# delegation tests) from target/interop-rust/debug/. Cold: about 3.5
# CPU-minutes for clippy and the build (a2a-pb compiles its protobuf
# types), 0.6 GB; then up to date in seconds.
interop_rust=(--manifest-path tests/interop-rust/Cargo.toml --target-dir target/interop-rust --locked)
cargo fmt --manifest-path tests/interop-rust/Cargo.toml -- --check
cargo clippy "${interop_rust[@]}" --all-targets -- -D warnings
cargo build "${interop_rust[@]}"

step "PostgreSQL for the store tests"
# shellcheck source=scripts/test-postgres.sh
source scripts/test-postgres.sh
ensure_postgres

step "cargo test (unit, router and scenario tests)"
cargo test

step "web chat logic tests"
cargo test -p asg-web --lib

step "browser tests (headless Chromium against the real binaries)"
cargo test -p asg-end2end -- --test-threads=2

step "packaging: release archive, Kubernetes manifests, Docker image and compose stack (scripts/test-docker.sh)"
# Skipped with a message where Docker cannot run; ASG_DOCKER=0 skips it.
bash scripts/test-docker.sh
