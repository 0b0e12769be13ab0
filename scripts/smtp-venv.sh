#!/usr/bin/env bash
# A Python venv with aiosmtpd under target/ for the email approval tests
# (tests/src/smtp.rs starts tests/smtp/sink.py with it: a real SMTP server
# that writes every message it receives to a directory). Called by
# scripts/test.sh before the tests; idempotent (nothing to do when the venv
# already has that version). Debian refuses pip installs into the system
# Python (externally-managed-environment), hence the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/smtp-venv
version=1.4.6
if "$venv/bin/python" -c "import importlib.metadata as m, aiosmtpd, sys; sys.exit(m.version('aiosmtpd') != '${version}')" 2>/dev/null; then
  echo "aiosmtpd ${version} already in ${venv}"
  exit 0
fi
mkdir -p target
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "aiosmtpd==${version}"
