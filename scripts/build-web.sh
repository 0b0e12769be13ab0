#!/usr/bin/env bash
# Builds the browser chat (web/, Leptos CSR) into web/dist with trunk.
# Idempotent: installs only what is missing —
#   the wasm32 target, trunk 0.21.14, wasm-bindgen-cli (the exact version
#   pinned in web/Cargo.toml) and wasm-opt (Debian's binaryen; when that
#   one is too old to handle wasm-bindgen's output, binaryen from npm;
#   without a working one the bundle is built unoptimized by wasm-opt).
# trunk runs --offline so it never downloads tools itself.
# Writes each file's compressed copies (.gz by zopfli, .br by brotli) for
# the web server to send. Prints the size of the .wasm, its `gzip -9`
# size and the sizes sent to browsers at the end, and fails when the
# `gzip -9` size is over GZIP_BUDGET_KIB or the .gz sent (zopfli's) over
# SENT_GZIP_BUDGET_KIB.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
export PATH="$HOME/.cargo/bin:$PATH"

TRUNK_VERSION=0.21.14
WASM_BINDGEN_VERSION=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' web/Cargo.toml)
WASM_BINDGEN_VERSION=${WASM_BINDGEN_VERSION:-0.2.130}

say() { printf '\n==> %s\n' "$*"; }

# Waits while someone else's `cargo install <name>` runs, so two installs
# of the same tool never race.
wait_for_install() {
  local name=$1
  while pgrep -f "cargo install $name" >/dev/null 2>&1; do
    echo "    waiting for a running 'cargo install $name' to finish..."
    sleep 15
  done
}

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# The standard library's sources: the bundle rebuilds std for wasm32 with
# the size options below (-Zbuild-std).
if ! rustup component list --installed | grep -qx rust-src; then
  say "adding the rust-src component"
  rustup component add rust-src
fi

# Both tools build in one shared directory (their common dependencies
# compile once), removed when both are installed.
TOOLS_BUILD_DIR=$(pwd)/target/tool-installs

wait_for_install trunk
if [ "$(trunk --version 2>/dev/null || true)" != "trunk $TRUNK_VERSION" ]; then
  say "installing trunk $TRUNK_VERSION (takes a while)"
  cargo install trunk --version "$TRUNK_VERSION" --locked --target-dir "$TOOLS_BUILD_DIR"
fi

wait_for_install wasm-bindgen-cli
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (takes a while)"
  # No --locked: one of its locked dependencies is not on the registry.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force --target-dir "$TOOLS_BUILD_DIR"
fi
rm -rf "$TOOLS_BUILD_DIR"

# Installs Debian packages (with sudo when not root); fails quietly where
# apt-get is missing or cannot reach its registry.
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo=sudo; fi
  $sudo apt-get update -qq && $sudo apt-get install -y -qq "$@"
}

if ! command -v wasm-opt >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  say "installing wasm-opt (Debian binaryen)"
  if ! apt_install binaryen; then
    echo "    could not install binaryen; building without wasm-opt"
  fi
fi

# Old wasm-opt releases (Debian 12's binaryen 108) rewrite a module with two
# tables wrongly: the export of wasm-bindgen's externref table ends up
# pointing at the function table, and the page stays blank
# ("WebAssembly.Table.set(): Argument 1 is invalid"). Probe with a tiny
# module: tables funcref + externref, exported as "f" -> 0 and "ext" -> 1.
wasm_opt_works() {
  local probe out hex=""
  probe=$(mktemp) out=$(mktemp)
  printf '\x00\x61\x73\x6d\x01\x00\x00\x00\x04\x07\x02\x70\x00\x01\x6f\x00\x04\x07\x0b\x02\x01\x66\x01\x00\x03\x65\x78\x74\x01\x01' >"$probe"
  if "$1" --enable-reference-types -Oz "$probe" -o "$out" >/dev/null 2>&1; then
    hex=$(od -An -tx1 -v "$out" | tr -d ' \n')
  fi
  rm -f "$probe" "$out"
  # "ext" (03 65 78 74), kind table (01), index 1 (01).
  [[ $hex == *036578740101* ]]
}

USE_WASM_OPT=no
if command -v wasm-opt >/dev/null 2>&1; then
  if wasm_opt_works wasm-opt; then
    USE_WASM_OPT=yes
  else
    echo "    $(wasm-opt --version 2>&1 | head -n1) breaks wasm-bindgen's externref table"
    # A current binaryen from the npm registry (runs on Node), kept under
    # target/ (ignored by git) and used only for this build.
    TOOLS="$ROOT/target/web-tools"
    if [ ! -x "$TOOLS/node_modules/.bin/wasm-opt" ] && command -v npm >/dev/null 2>&1; then
      say "installing a current wasm-opt (npm package binaryen) into target/web-tools"
      npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error binaryen@132.0.0 || true
    fi
    if [ -x "$TOOLS/node_modules/.bin/wasm-opt" ] && wasm_opt_works "$TOOLS/node_modules/.bin/wasm-opt"; then
      export PATH="$TOOLS/node_modules/.bin:$PATH"
      USE_WASM_OPT=yes
    fi
  fi
fi
if [ "$USE_WASM_OPT" = yes ]; then
  echo "    wasm-opt: $(command -v wasm-opt) ($(wasm-opt --version 2>&1 | head -n1))"
else
  echo "    no working wasm-opt: building without it (larger bundle)"
fi

say "building web/ (trunk build --release --offline)"
# trunk builds with the workspace's [profile.wasm-release] (opt-level "z",
# LTO, one codegen unit, panic = "abort": `data-cargo-profile-release` in
# web/index.html), then runs `wasm-opt -Oz` (`data-wasm-opt="z"`). Native
# release builds keep [profile.release]; wasm32 artifacts have their own
# target directory, so neither rebuilds the other.
# `--cfg erase_components` makes Leptos type-erase each component's view
# (one `AnyView` instead of a nested generic type per view), which
# compiles far fewer copies of the rendering code: about 10 KiB gzipped.
export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }--cfg erase_components"
# The standard library is rebuilt for the bundle (-Zbuild-std), sized
# rather than fast (`optimize_for_size`), with panics that stop at once:
# `-Cpanic=immediate-abort` drops the panic machinery (messages, their
# formatting, `Debug` impls kept only for them) and `-Zlocation-detail=none`
# the source paths of panics. A panic in the browser was already an
# abort (`panic = "abort"`) that printed nothing; these remove the code
# behind it: 336 -> 307 KiB gzipped. These are unstable options of the
# same stable compiler, allowed for this build only (RUSTC_BOOTSTRAP=1);
# a compiler that no longer knows them stops the build here, by name.
SIZE_FLAGS=(-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none)
if ! RUSTC_BOOTSTRAP=1 rustc --print cfg --target wasm32-unknown-unknown "${SIZE_FLAGS[@]}" >/dev/null; then
  echo "ERROR: this rustc ($(rustc --version)) does not take ${SIZE_FLAGS[*]}; see web/README.md (Build notes)" >&2
  exit 1
fi
export RUSTC_BOOTSTRAP=1
# Rebuilding std needs its own dependencies (its workspace in rust-src has
# a Cargo.lock of its own); trunk builds --offline, so they are fetched
# first: on a machine that never built std they are not in Cargo's cache
# ("no matching package named `moto-rt` found").
STD_WORKSPACE="$(rustc --print sysroot)/lib/rustlib/src/rust/library/Cargo.toml"
if ! cargo fetch --manifest-path "$STD_WORKSPACE" --target wasm32-unknown-unknown --locked -q; then
  echo "ERROR: could not fetch the standard library's dependencies ($STD_WORKSPACE) from the registry" >&2
  exit 1
fi
export CARGO_UNSTABLE_BUILD_STD=std,panic_abort
export CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size
export RUSTFLAGS="$RUSTFLAGS ${SIZE_FLAGS[*]}"
cd web
if [ "$USE_WASM_OPT" = yes ]; then
  trunk build --release --offline
else
  # Same build, without the wasm-opt pass.
  sed 's/data-wasm-opt="z"/data-wasm-opt="0"/' index.html >index.no-opt.html
  trap 'rm -f "$ROOT/web/index.no-opt.html"' EXIT
  trunk build --release --offline index.no-opt.html
  if [ -f dist/index.no-opt.html ]; then mv dist/index.no-opt.html dist/index.html; fi
fi
cd "$ROOT"

# Compressed copies for the web server to send (`asg-web-server` serves a
# file's .br or .gz to a browser that accepts it): .gz by zopfli, a gzip
# stream a few per cent smaller than `gzip -9`'s (that when zopfli is
# missing), and .br by brotli at its highest quality (none without it).
# Made anew after every build, so none outlives the file it stands for.
if ! { command -v zopfli && command -v brotli; } >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  say "installing zopfli and brotli (Debian)"
  if ! apt_install zopfli brotli >/dev/null; then
    echo "    could not install them; gzip -9 instead of zopfli, and no .br"
  fi
fi
say "compressing web/dist for serving"
find web/dist -type f \( -name '*.gz' -o -name '*.br' \) -delete
find web/dist -type f \( -name '*.wasm' -o -name '*.js' -o -name '*.css' -o -name '*.html' \) -print0 |
  while IFS= read -r -d '' file; do
    if command -v zopfli >/dev/null 2>&1; then
      zopfli -c "$file" >"$file.gz"
    else
      gzip -9 -n -c "$file" >"$file.gz"
    fi
    if command -v brotli >/dev/null 2>&1; then
      brotli -q 11 -c "$file" >"$file.br"
    fi
  done

WASM=$(ls -S web/dist/*.wasm | head -n1)
BYTES=$(wc -c <"$WASM")
GZIPPED=$(gzip -9 -c "$WASM" | wc -c)
SERVED_GZ=$(wc -c <"$WASM.gz")
say "built web/dist"
printf '    %s: %d bytes (%d KiB), gzipped %d bytes (%d KiB)\n' \
  "$WASM" "$BYTES" $((BYTES / 1024)) "$GZIPPED" $((GZIPPED / 1024))
printf '    sent to browsers: %d bytes (%d KiB) as gzip' "$SERVED_GZ" $((SERVED_GZ / 1024))
if [ -f "$WASM.br" ]; then
  SERVED_BR=$(wc -c <"$WASM.br")
  printf ', %d bytes (%d KiB) as brotli' "$SERVED_BR" $((SERVED_BR / 1024))
fi
echo

# The size budget of the chat bundle: the gzipped .wasm may not grow past
# this (KiB). 359 KiB before the size work of issue 25, about 315 KiB
# after it; the goal there is 200 KiB as sent (SENT_GZIP_BUDGET_KIB
# below). Raised from 330 to 340 for the question cards of issue 21 (the
# answer forms: 334 KiB); 338 once the approval lists shared one sort (337 KiB); 308 with std
# rebuilt for size and panics that abort at once (307 KiB); 251 with
# Markdown rendered by the agent (250 KiB); 246 with timestamps read by
# chrono's RFC 3339 reader (245 KiB); 236 with structs read from JSON
# objects only (236 KiB, 241,212 B); 227 with one HTTP exchange for every
# call and the avatar's initial upper-cased by the stylesheet (226 KiB,
# 231,410 B); 221 with the four keyed lists drawn by one `<For>` (220 KiB,
# 225,929 B); 220 with six `<Show>`s of fixed conditions made plain
# `bool::then` (219 KiB, 225,096 B); 218 with the other eleven drawn by
# one function (217 KiB, 223,132 B); 216 with the functions laid out by
# name (215 KiB, 220,312 B; 205 KiB as zopfli's .gz, 175 as the .br);
# 209 with the chat reading only a paused run's step count and its sets
# hashed by rustc-hash (208 KiB, 213,440 B; 199 KiB as zopfli's .gz,
# 170 as the .br). Lower it as the bundle shrinks; raise it only on
# purpose, with the reason in the commit. web/README.md ("Bundle size")
# says where the bytes go and how to look (twiggy).
GZIP_BUDGET_KIB=209
if [ "$GZIPPED" -gt $((GZIP_BUDGET_KIB * 1024)) ]; then
  printf '\nERROR: the chat bundle is %d KiB gzipped, over its budget of %d KiB (GZIP_BUDGET_KIB in %s)\n' \
    $((GZIPPED / 1024)) "$GZIP_BUDGET_KIB" "$0" >&2
  if [ "$USE_WASM_OPT" != yes ]; then
    echo "       (built without wasm-opt: install binaryen, see above)" >&2
  fi
  exit 1
fi
echo "    within the budget of $GZIP_BUDGET_KIB KiB gzipped"

# What a browser that accepts gzip downloads, zopfli's .gz: issue 25's
# goal of 200 KiB. Checked where zopfli made the copy (gzip -9's is the
# one above).
SENT_GZIP_BUDGET_KIB=200
if command -v zopfli >/dev/null 2>&1; then
  if [ "$SERVED_GZ" -gt $((SENT_GZIP_BUDGET_KIB * 1024)) ]; then
    printf '\nERROR: the chat bundle is sent as %d bytes of gzip, over its budget of %d KiB (SENT_GZIP_BUDGET_KIB in %s)\n' \
      "$SERVED_GZ" "$SENT_GZIP_BUDGET_KIB" "$0" >&2
    exit 1
  fi
  echo "    sent within the budget of $SENT_GZIP_BUDGET_KIB KiB gzipped"
fi
