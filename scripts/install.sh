#!/usr/bin/env bash
# Set up everything hubgrid needs on this machine (idempotent; a second run is fast).
#
#   bash scripts/install.sh [--with-postgres]
#
# - .venv at the repo root with `pip install -e '.[test]'` (re-run only when
#   pyproject.toml changed; stamp: .venv/.hubgrid-installed = sha256 of pyproject.toml)
# - configurable-http-proxy from npm into ./node_modules
# - with --with-postgres: the Debian `postgresql` package (apt)
#
# Environment: PYTHON (default: python3) picks the interpreter for the venv.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

log() { printf '[install] %s\n' "$*" >&2; }
die() { printf '[install] ERROR: %s\n' "$*" >&2; exit 1; }

WITH_POSTGRES=0
for arg in "$@"; do
    case "$arg" in
        --with-postgres) WITH_POSTGRES=1 ;;
        -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg (usage: $0 [--with-postgres])" ;;
    esac
done

# ---------------------------------------------------------------- PostgreSQL
# Done first: apt is independent of the venv, and a failure here should not
# leave a half-finished Python install behind it.
if [[ "$WITH_POSTGRES" == 1 ]]; then
    pg_installed() {
        [[ "$(dpkg-query -W -f='${Status}' postgresql 2>/dev/null || true)" == "install ok installed" ]]
    }
    if pg_installed; then
        log "postgresql already installed"
    else
        [[ "$(id -u)" == 0 ]] || die "installing postgresql needs root"
        log "installing postgresql (apt)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends postgresql
        pg_installed || die "postgresql did not install"
    fi
fi

# ---------------------------------------------------------------- base tools
# the project's machines ship Python 3.11 and Node; a bare Debian gets them here
apt_install() {
    [[ "$(id -u)" == 0 ]] || die "installing $* needs root"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "$@"
}
PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1 || ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    log "installing python3 and python3-venv (apt)"
    apt_install python3 python3-venv python3-dev
fi
if ! command -v npm >/dev/null 2>&1; then
    log "installing nodejs and npm (apt)"
    apt_install nodejs npm
fi

# ---------------------------------------------------------------- Python venv
VENV="$REPO_ROOT/.venv"
STAMP="$VENV/.hubgrid-installed"

# A venv whose interpreter or pip no longer runs (the base Python moved, or a
# first attempt died half-way) is rebuilt.
if [[ -d "$VENV" ]] && ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    log "existing .venv is broken; recreating it"
    rm -rf "$VENV"
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "no '$PYTHON' on PATH (set PYTHON=/path/to/python3.11)"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || die "$("$PYTHON" --version 2>&1) is too old: hubgrid needs Python >= 3.11"
    log "creating .venv with $("$PYTHON" --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi

want_hash="$(sha256sum pyproject.toml | cut -d' ' -f1)"
have_hash="$(cat "$STAMP" 2>/dev/null || true)"
if [[ "$want_hash" == "$have_hash" ]]; then
    log "Python packages up to date (pyproject.toml unchanged)"
else
    log "installing Python packages: pip install -e '.[test]'"
    rm -f "$STAMP"
    "$VENV/bin/python" -m pip install --upgrade pip
    "$VENV/bin/python" -m pip install -e '.[test]'
    printf '%s\n' "$want_hash" > "$STAMP"
fi

# ---------------------------------------------------------------- node tools
if [[ -x node_modules/.bin/configurable-http-proxy ]]; then
    log "configurable-http-proxy already installed"
else
    command -v npm >/dev/null 2>&1 || die "npm not found on PATH"
    log "installing configurable-http-proxy (npm)"
    npm install --no-save --no-audit --no-fund --no-package-lock configurable-http-proxy@^4
    [[ -x node_modules/.bin/configurable-http-proxy ]] || die "configurable-http-proxy did not install"
fi

log "done"
