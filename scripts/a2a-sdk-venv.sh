# shellcheck shell=bash
# Sourced by scripts/test.sh (the A2A interop tests) and scripts/bench.sh
# (the a2a-sdk echo server anchor): one place that makes the Python venvs
# with the official A2A SDK under target/.
#
# sdk_venv DIR VERSION [EXTRA PACKAGES...]: a venv in DIR with
# a2a-sdk[http-server]==VERSION (and the extra packages, by plain name);
# nothing to do when DIR already has that version and every extra
# package. Debian 12 refuses pip installs into the system Python
# (externally-managed-environment), hence the venv.
sdk_venv() {
  local venv=$1 version=$2
  shift 2
  local package extras=""
  for package in "$@"; do extras="${extras} m.version('${package}');"; done
  if "$venv/bin/python" -c "import importlib.metadata as m, a2a, sys;${extras} sys.exit(m.version('a2a-sdk') != '${version}')" 2>/dev/null; then
    echo "a2a-sdk ${version} already in ${venv}"
    return
  fi
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "a2a-sdk[http-server]==${version}" "$@"
}
