# Sourced by scripts/test.sh: makes a PostgreSQL server available to the
# store tests and exports ASG_TEST_DATABASE_URL (each test creates and
# drops a database of its own on it).
#
# - ASG_TEST_DATABASE_URL already set: used as it is.
# - A server on 127.0.0.1:5432 that lets user postgres in without a
#   password (the project's machines run one, trust auth): used.
# - Otherwise (or with ASG_PRIVATE_POSTGRES=1): Debian's postgresql is
#   installed if missing, and a private cluster is created under
#   target/pgdata (or under $TMPDIR when the postgres user cannot reach
#   target/) and started on 127.0.0.1:55432, as the postgres user when run
#   as root; it is stopped when the calling script exits.

PRIVATE_POSTGRES_PORT=55432

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

# pg_login PORT: a server on PORT lets user postgres in (no password).
pg_login() {
  command -v psql >/dev/null 2>&1 \
    && PGCONNECT_TIMEOUT=3 psql -w -q -h 127.0.0.1 -p "$1" -U postgres -d postgres \
      -c 'select 1' >/dev/null 2>&1
}

# as_owner CMD...: runs CMD as the cluster's owner (from /, which it can
# always enter).
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

# The cluster's directory: target/pgdata when its owner can reach it.
private_postgres_dir() {
  local dir="$PWD/target/pgdata"
  mkdir -p "$PWD/target"
  if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$PWD/target"; then
    dir="${TMPDIR:-/tmp}/asg-pgdata"
  fi
  echo "$dir"
}

stop_private_postgres() {
  if [ -n "${PRIVATE_POSTGRES_DIR:-}" ]; then
    as_owner "$PRIVATE_POSTGRES_BIN/pg_ctl" -D "$PRIVATE_POSTGRES_DIR" -m fast stop >/dev/null 2>&1 || true
  fi
}

start_private_postgres() {
  local bin data
  bin=$(pg_bin) || true
  if [ -z "$bin" ]; then
    apt_install postgresql
    bin=$(pg_bin) || true
  fi
  if [ -z "$bin" ]; then
    echo "PostgreSQL's initdb was not found after installing postgresql" >&2
    exit 1
  fi
  data=$(private_postgres_dir)
  if [ ! -s "$data/PG_VERSION" ]; then
    rm -rf "$data"
    mkdir -p "$data"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$data"; fi
    as_owner "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
  fi
  if [ "$(id -u)" = 0 ]; then chown -R postgres: "$data"; fi
  if ! pg_login "$PRIVATE_POSTGRES_PORT"; then
    as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
      -o "-p $PRIVATE_POSTGRES_PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
    PRIVATE_POSTGRES_BIN=$bin
    PRIVATE_POSTGRES_DIR=$data
    trap stop_private_postgres EXIT
  fi
  export ASG_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$PRIVATE_POSTGRES_PORT/postgres"
  echo "private PostgreSQL in $data on 127.0.0.1:$PRIVATE_POSTGRES_PORT"
}

ensure_postgres() {
  if [ -n "${ASG_TEST_DATABASE_URL:-}" ]; then
    echo "using ASG_TEST_DATABASE_URL as given"
  elif [ "${ASG_PRIVATE_POSTGRES:-0}" != 1 ] && pg_login 5432; then
    export ASG_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres"
    echo "using the PostgreSQL server on 127.0.0.1:5432"
  else
    start_private_postgres
  fi
}
