#!/usr/bin/env bash
# Start the local Debian PostgreSQL 15 cluster (idempotent) and make sure the
# hubgrid test role and database exist. Listens on localhost only (Debian default).
#
#   bash scripts/start-postgres.sh
#
# Progress goes to stderr; the last line of stdout is the SQLAlchemy URL:
#   postgresql+psycopg2://hubgrid:hubgrid@127.0.0.1:5432/hubgrid_test
# Needs root and the `postgresql` package (bash scripts/install.sh --with-postgres).
set -euo pipefail

PG_VERSION=15
PG_CLUSTER=main
PG_HOST=127.0.0.1
DB_USER=hubgrid
DB_PASSWORD=hubgrid
DB_NAME=hubgrid_test
WAIT_SECONDS=60

log() { printf '[postgres] %s\n' "$*" >&2; }
die() { printf '[postgres] ERROR: %s\n' "$*" >&2; exit 1; }

[[ "$(id -u)" == 0 ]] || die "must run as root (it starts the cluster as user postgres)"
command -v pg_ctlcluster >/dev/null 2>&1 \
    || die "PostgreSQL is not installed: run 'bash scripts/install.sh --with-postgres' first"
[[ -x "/usr/lib/postgresql/$PG_VERSION/bin/postgres" ]] \
    || die "PostgreSQL $PG_VERSION server binaries missing: run 'bash scripts/install.sh --with-postgres'"

# Run everything as postgres from a directory it can read (avoids cwd warnings).
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

if [[ ! -d "/etc/postgresql/$PG_VERSION/$PG_CLUSTER" ]]; then
    log "creating cluster $PG_VERSION/$PG_CLUSTER"
    pg_createcluster "$PG_VERSION" "$PG_CLUSTER" >&2
fi

PG_PORT="$(pg_conftool -s "$PG_VERSION" "$PG_CLUSTER" show port 2>/dev/null || echo 5432)"

# The suite runs several hubs side by side, each hubgrid service with its own
# connection pool (SQLAlchemy: up to 15): Debian's 100 connections run out.
MAX_CONNECTIONS=300
current_max="$(pg_conftool -s "$PG_VERSION" "$PG_CLUSTER" show max_connections 2>/dev/null || echo 100)"
restart=0
if (( current_max < MAX_CONNECTIONS )); then
    log "max_connections $current_max -> $MAX_CONNECTIONS"
    pg_conftool "$PG_VERSION" "$PG_CLUSTER" set max_connections "$MAX_CONNECTIONS"
    restart=1
fi

if pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" status >/dev/null 2>&1; then
    log "cluster $PG_VERSION/$PG_CLUSTER already running (port $PG_PORT)"
    if (( restart )); then
        log "restarting cluster $PG_VERSION/$PG_CLUSTER for the new max_connections"
        pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" "$PG_CLUSTER" restart >&2 \
            || die "pg_ctlcluster restart failed; see /var/log/postgresql/postgresql-$PG_VERSION-$PG_CLUSTER.log"
    fi
else
    log "starting cluster $PG_VERSION/$PG_CLUSTER (port $PG_PORT)"
    pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" "$PG_CLUSTER" start >&2 \
        || die "pg_ctlcluster start failed; see /var/log/postgresql/postgresql-$PG_VERSION-$PG_CLUSTER.log"
fi

deadline=$((SECONDS + WAIT_SECONDS))
until pg_isready -q -h "$PG_HOST" -p "$PG_PORT"; do
    if (( SECONDS >= deadline )); then
        die "PostgreSQL did not accept connections on $PG_HOST:$PG_PORT within ${WAIT_SECONDS}s; see /var/log/postgresql/postgresql-$PG_VERSION-$PG_CLUSTER.log"
    fi
    sleep 1
done
log "accepting connections on $PG_HOST:$PG_PORT"

psql_admin() {
    as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$PG_PORT" -d postgres "$@"
}

# Role: create it, or reset its password/attributes so the URL below always works.
psql_admin >&2 <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '$DB_USER') THEN
        CREATE ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASSWORD';
    ELSE
        ALTER ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASSWORD';
    END IF;
END
\$\$;
-- the tests drop their databases WITH (FORCE), which also ends an autovacuum
-- worker busy in them: that needs pg_signal_backend (else "must be a member
-- of the role whose process is being terminated")
GRANT pg_signal_backend TO $DB_USER;
SQL

if [[ "$(psql_admin -tA -c "SELECT 1 FROM pg_catalog.pg_database WHERE datname = '$DB_NAME'")" != 1 ]]; then
    log "creating database $DB_NAME"
    psql_admin -c "CREATE DATABASE $DB_NAME OWNER $DB_USER" >&2
else
    psql_admin -c "ALTER DATABASE $DB_NAME OWNER TO $DB_USER" >&2
fi

log "ready"
echo "postgresql+psycopg2://$DB_USER:$DB_PASSWORD@$PG_HOST:$PG_PORT/$DB_NAME"
