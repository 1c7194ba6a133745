#!/usr/bin/env bash
# Set up everything hubgrid needs on this machine (idempotent; a second run is fast).
#
#   bash scripts/install.sh [--with-postgres] [--with-chromium]
#
# - .venv at the repo root with `pip install -e '.[test]'` (re-run only when
#   pyproject.toml changed; stamp: .venv/.hubgrid-installed = sha256 of pyproject.toml)
# - configurable-http-proxy from npm into ./node_modules
# - the JupyterLab extension (labextension/, jupyterlab-hubgrid): npm ci, the
#   JS build, the hubgrid console's bundle (quota_service/console_static) and
#   `pip install -e` into .venv, each redone only when its inputs changed
#   (stamps: labextension/node_modules/.hubgrid-deps, labextension/.build-stamp,
#   labextension/.console-stamp, .venv/.hubgrid-labextension)
# - with --with-postgres: the Debian `postgresql` package (apt)
# - with --with-chromium: Debian's `chromium` (apt; /usr/bin/chromium, which
#   the UI tests drive through Python playwright: never a browser download)
#
# Environment: PYTHON (default: python3) picks the interpreter for the venv.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

log() { printf '[install] %s\n' "$*" >&2; }
die() { printf '[install] ERROR: %s\n' "$*" >&2; exit 1; }

WITH_POSTGRES=0
WITH_CHROMIUM=0
for arg in "$@"; do
    case "$arg" in
        --with-postgres) WITH_POSTGRES=1 ;;
        --with-chromium) WITH_CHROMIUM=1 ;;
        -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg (usage: $0 [--with-postgres] [--with-chromium])" ;;
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

# ---------------------------------------------------------------- Chromium
# for the UI tests (tests/test_ui_lab.py): Debian's browser at /usr/bin/chromium
if [[ "$WITH_CHROMIUM" == 1 ]]; then
    if [[ -x /usr/bin/chromium ]]; then
        log "chromium already installed"
    else
        [[ "$(id -u)" == 0 ]] || die "installing chromium needs root"
        log "installing chromium (apt)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends chromium
        [[ -x /usr/bin/chromium ]] || die "chromium did not install (/usr/bin/chromium is missing)"
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
# the load balancer of model-serving endpoints (gateway/balancer.py runs it)
if [[ ! -x /usr/sbin/haproxy ]] && ! command -v haproxy >/dev/null 2>&1; then
    log "installing haproxy (apt)"
    apt_install haproxy
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
# the framework start-up hook for local sessions, which run from .venv: caps a
# session's GPU memory share on import of PyTorch / TensorFlow / JAX (docs/gpus.md)
"$VENV/bin/python" -m spawner.gpuhook install >/dev/null

# ---------------------------------------------------------------- node tools
# 5.x: isolated Docker sessions are reached on Unix sockets (http+unix targets,
# which 4.x cannot proxy); an older install is upgraded
chp_major() {
    node -p 'require("./node_modules/configurable-http-proxy/package.json").version.split(".")[0]' 2>/dev/null || echo 0
}
if [[ -x node_modules/.bin/configurable-http-proxy && "$(chp_major)" == 5 ]]; then
    log "configurable-http-proxy 5 already installed"
else
    command -v npm >/dev/null 2>&1 || die "npm not found on PATH"
    log "installing configurable-http-proxy 5 (npm)"
    npm install --no-save --no-audit --no-fund --no-package-lock configurable-http-proxy@^5.3
    [[ -x node_modules/.bin/configurable-http-proxy && "$(chp_major)" == 5 ]] \
        || die "configurable-http-proxy 5 did not install"
fi

# ---------------------------------------------------------------- JupyterLab extension
# labextension/ (jupyterlab-hubgrid) into .venv: npm dependencies (only when
# package.json or the lock changed), the JS build (only when its sources
# changed), then `pip install -e` (only when the build or the package's
# metadata changed), which copies the built extension into .venv/share.
LABEXT="$REPO_ROOT/labextension"
tree_hash() {  # sha256 over the named files and directories of labextension/
    (cd "$LABEXT" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) \
        | sha256sum | cut -d' ' -f1
}
deps_hash="$(tree_hash package.json package-lock.json)"
if [[ "$(cat "$LABEXT/node_modules/.hubgrid-deps" 2>/dev/null || true)" == "$deps_hash" ]]; then
    log "labextension npm packages up to date"
else
    log "installing labextension npm packages (npm ci)"
    (cd "$LABEXT" && npm ci --no-audit --no-fund)
    printf '%s\n' "$deps_hash" > "$LABEXT/node_modules/.hubgrid-deps"
fi
# build_stamped WHAT HOW STAMP HASH MADE COMMAND...: in labextension/, runs
# COMMAND (with the venv's tools on PATH) unless STAMP holds HASH and the
# file MADE is there; the stamp goes first and is written again only once
# the build made MADE, so a build that failed halfway is redone next time
build_stamped() {
    local what="$1" how="$2" stamp="$3" hash="$4" made="$5"
    shift 5
    if [[ -f "$made" && "$(cat "$stamp" 2>/dev/null || true)" == "$hash" ]]; then
        log "$what up to date"
        return
    fi
    log "building the $what ($how)"
    rm -f "$stamp"
    (cd "$LABEXT" && PATH="$VENV/bin:$PATH" "$@")
    [[ -f "$made" ]] || die "the $what build left no $made"
    printf '%s\n' "$hash" > "$stamp"
}
build_hash="$(tree_hash package.json package-lock.json tsconfig.json src style schema)"
BUILT="$LABEXT/jupyterlab_hubgrid/labextension"
build_stamped "labextension" "tsc + jupyter labextension build" "$LABEXT/.build-stamp" \
    "$build_hash" "$BUILT/static/style.js" npm run build:prod
# the hubgrid console's bundle (labextension/src/console.ts, from lib/ as
# built above), served by the hubgrid service: quota_service/console_static
CONSOLE_JS="$REPO_ROOT/quota_service/console_static/console.js"
build_stamped "hubgrid console bundle" "webpack" "$LABEXT/.console-stamp" \
    "$build_hash-$(tree_hash console.webpack.config.js)" "$CONSOLE_JS" \
    npx webpack --config console.webpack.config.js
LAB_STAMP="$VENV/.hubgrid-labextension"
INSTALLED="$VENV/share/jupyter/labextensions/jupyterlab-hubgrid"
lab_hash="$(tree_hash pyproject.toml install.json jupyter-config)-$build_hash"
if [[ "$(cat "$LAB_STAMP" 2>/dev/null || true)" == "$lab_hash" && -f "$INSTALLED/package.json" ]] \
    && "$VENV/bin/python" -c 'import jupyterlab_hubgrid' >/dev/null 2>&1; then
    log "jupyterlab-hubgrid installed"
else
    log "installing jupyterlab-hubgrid into .venv (editable)"
    rm -f "$LAB_STAMP"
    # a `jupyter labextension develop` symlink: pip would delete and write
    # through it, into the build
    if [[ -L "$INSTALLED" ]]; then rm -f "$INSTALLED"; fi
    "$VENV/bin/python" -m pip install 'hatchling>=1.5' 'hatch-nodejs-version>=0.3.2' \
        'hatch-jupyter-builder>=0.5' editables
    # the build above made the extension: the build hook only checks it is there
    HATCH_JUPYTER_BUILDER_SKIP_NPM=1 "$VENV/bin/python" -m pip install --no-build-isolation -e "$LABEXT"
    printf '%s\n' "$lab_hash" > "$LAB_STAMP"
fi

# ---------------------------------------------------------------- import cost
# After the last pip install (which would bring them back): without
# rfc3987-syntax and lark, as in the session images (images/base/Dockerfile).
# jsonschema[format-nongpl] (through jupyter_events) imports rfc3987_syntax,
# which compiles its Lark grammars at import: 1.4-1.6 CPU seconds in every
# hub, every local Jupyter server and every process that imports jsonschema,
# for the "iri" formats, which no JupyterHub or Jupyter schema uses (jsonschema
# leaves them unchecked without it; tests/test_import_cost.py).
if "$VENV/bin/python" -m pip show --quiet rfc3987-syntax >/dev/null 2>&1; then
    log "removing rfc3987-syntax and lark from .venv (import cost)"
    "$VENV/bin/python" -m pip uninstall --yes --quiet rfc3987-syntax lark
fi

log "done"
