# Helpers shared by the parts of scripts/test-docker.sh (sourced).

step() { printf '\n==> %s\n' "$*"; }
ok() { printf '  ok: %s\n' "$*"; }
fail() {
  printf 'FAILED: %s\n' "$*" >&2
  exit 1
}

# free_ports N: N distinct free TCP ports on 127.0.0.1, one per line.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print("\n".join(str(s.getsockname()[1]) for s in held))
PY
}

# wait_for_url URL SECONDS: 0 once a GET of URL answers 2xx.
wait_for_url() {
  local url=$1 deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    curl -sf -o /dev/null "$url" && return 0
    sleep 0.5
  done
  return 1
}

# apt_install PACKAGE...: Debian packages, as root or with sudo.
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo=sudo
  fi
  echo "    installing $* (apt-get)"
  $sudo apt-get update -qq >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

human_size() { numfmt --to=iec-i --suffix=B "$1" 2>/dev/null || echo "$1 bytes"; }
