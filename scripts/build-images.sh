#!/usr/bin/env bash
# Build hubgrid's session images and copy them to every Docker engine
# (idempotent; a rerun with nothing changed takes about a second).
#
#   bash scripts/build-images.sh [--hosts URL,URL...] [--all]
#
# On the first host (default: $DOCKER_HOST or unix:///var/run/docker.sock):
# 1. hubgrid/debian:bookworm: a local Debian base, since no container registry
#    is reachable: debootstrap (minbase + python3, python3-venv, ca-certificates,
#    tini, procps) from the host's Debian mirror, then `docker import`. The root
#    file system tarball is cached under /var/cache/hubgrid/.
# 2. the wheel of the JupyterLab extension and `hubgrid` command (labextension/,
#    jupyterlab-hubgrid): `pip wheel` with .venv's build tools, from the JS build
#    scripts/install.sh made (HATCH_JUPYTER_BUILDER_SKIP_NPM=1: npm is not run
#    here). Hatchling builds it byte for byte the same from the same sources.
# 3. hubgrid/base:latest from images/base/Dockerfile (BASE_IMAGE=the image of 1,
#    JUPYTERHUB_VERSION=the version installed in .venv), with the wheel of 2.
# 4. hubgrid/inference:latest from images/inference/Dockerfile (BASE_IMAGE=the
#    image of 1): the inference servers and their model (docs/serving.md).
# 5. with --all: hubgrid/datascience:latest from images/datascience/Dockerfile.
# An image is rebuilt only when its label ai.hubgrid.build-hash differs from the
# sha256 over its build context, build arguments and parent image id (so the
# base image is rebuilt when the wheel changed, and only then). Each build
# runs in a temporary context: the Dockerfile's directory + the host CA bundle
# (ca-certificates.crt, for pip) + spawner/scripts/hubgrid-session (+ for the
# base image, wheels/ with the wheel of 2).
# Then every image is copied to the other hosts (docker save | docker load),
# unless a host already has the same image id.
#
# Progress goes to stderr; stdout lists the images, the last line is the base
# session image (hubgrid/base:latest).
# Environment: JUPYTERHUB_VERSION (default: from .venv), HUBGRID_DEBIAN_MIRROR
# (default: the host's apt source for bookworm).
# Needs root and running engines (bash scripts/start-docker.sh).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

DOCKER=/usr/bin/docker
CACHE_DIR=/var/cache/hubgrid
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
SESSION_SCRIPT="$REPO_ROOT/spawner/scripts/hubgrid-session"
RELAY_SCRIPT="$REPO_ROOT/spawner/scripts/hubgrid-relay"
GPU_HOOK_DIR="$REPO_ROOT/spawner/gpuhook"
LABEXT="$REPO_ROOT/labextension"
LABEXT_BUILT="$LABEXT/jupyterlab_hubgrid/labextension/static/style.js"
HASH_LABEL=ai.hubgrid.build-hash

DEBIAN_IMAGE=hubgrid/debian:bookworm
DEBIAN_SUITE=bookworm
DEBIAN_VARIANT=minbase
# tini is in bookworm (main); the session entrypoint runs under it as PID 1
DEBIAN_INCLUDE=python3,python3-venv,ca-certificates,tini,procps
# bump when the rootfs recipe below changes
DEBIAN_RECIPE_VERSION=2
BASE_IMAGE=hubgrid/base:latest
DATASCIENCE_IMAGE=hubgrid/datascience:latest
INFERENCE_IMAGE=hubgrid/inference:latest

log() { printf '[images] %s\n' "$*" >&2; }
die() { printf '[images] ERROR: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,34p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

HOSTS_ARG="${DOCKER_HOST:-unix:///var/run/docker.sock}"
ALL=0
while (($#)); do
    case "$1" in
        --hosts) [[ $# -ge 2 ]] || die "--hosts needs a comma-separated list"; HOSTS_ARG="$2"; shift 2 ;;
        --hosts=*) HOSTS_ARG="${1#*=}"; shift ;;
        --all) ALL=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument: $1 (usage: $0 [--hosts URL,URL...] [--all])" ;;
    esac
done

HOSTS=()
IFS=, read -r -a raw_hosts <<< "$HOSTS_ARG"
for h in "${raw_hosts[@]}"; do
    h="${h//[[:space:]]/}"
    [[ -n "$h" ]] && HOSTS+=("$h")
done
((${#HOSTS[@]})) || die "--hosts is empty"
FIRST="${HOSTS[0]}"

[[ "$(id -u)" == 0 ]] || die "must run as root (debootstrap, /var/cache/hubgrid)"
[[ -x "$DOCKER" ]] || die "$DOCKER missing: run 'bash scripts/start-docker.sh' first"
for h in "${HOSTS[@]}"; do
    "$DOCKER" -H "$h" info >/dev/null 2>&1 \
        || die "no Docker engine answers at $h: run 'bash scripts/start-docker.sh' first"
done
[[ -r "$CA_BUNDLE" ]] || die "$CA_BUNDLE missing (Debian package ca-certificates)"
[[ -r "$SESSION_SCRIPT" ]] || die "$SESSION_SCRIPT missing"

mkdir -p "$CACHE_DIR"
# one build at a time on this machine (parallel `make test` runs share the engines)
exec 9> "$CACHE_DIR/build-images.lock"
flock 9

dk() { "$DOCKER" -H "$FIRST" "$@"; }
image_id() { "$DOCKER" -H "$1" image inspect -f '{{.Id}}' "$2" 2>/dev/null || true; }
image_hash() { dk image inspect -f "{{index .Config.Labels \"$HASH_LABEL\"}}" "$1" 2>/dev/null || true; }
sha256() { sha256sum | cut -d' ' -f1; }

# ---------------------------------------------------------------- Debian base
debian_mirror() {
    if [[ -n "${HUBGRID_DEBIAN_MIRROR:-}" ]]; then
        echo "$HUBGRID_DEBIAN_MIRROR"; return
    fi
    local f=/etc/apt/sources.list.d/debian.sources uri
    if [[ -r "$f" ]]; then
        # deb822: the URIs of the first stanza whose Suites list bookworm itself
        uri="$(awk -v suite="$DEBIAN_SUITE" '
            /^[[:space:]]*$/ { if (u != "" && s) { print u; exit } u = ""; s = 0; next }
            /^URIs:/ { u = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) s = 1 }
            END { if (u != "" && s) print u }' "$f" | head -n1)"
        if [[ -n "$uri" ]]; then echo "$uri"; return; fi
    fi
    if [[ -r /etc/apt/sources.list ]]; then
        uri="$(awk -v suite="$DEBIAN_SUITE" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list)"
        if [[ -n "$uri" ]]; then echo "$uri"; return; fi
    fi
    echo http://deb.debian.org/debian
}

ROOTFS=""
cleanup_rootfs() {
    [[ -n "$ROOTFS" && -d "$ROOTFS" ]] || return 0
    # debootstrap mounts proc/sys in the target; never rm -rf through a mount
    local m
    awk -v r="$ROOTFS" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r \
        | while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done
    if awk -v r="$ROOTFS" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        log "WARNING: leaving $ROOTFS in place: something is still mounted below it"
    else
        rm -rf "$ROOTFS"
    fi
}
CTX=""
WHEELS=""
cleanup() {
    cleanup_rootfs
    [[ -z "$CTX" ]] || rm -rf "$CTX"
    [[ -z "$WHEELS" ]] || rm -rf "$WHEELS"
}
trap cleanup EXIT

# slim_rootfs DIR: container-friendly apt and dpkg (no recommends; no docs,
# man pages or translations, now or in later installs; like Debian's -slim
# images), no downloaded packages or package lists kept
slim_rootfs() {
    local r="${1:?}"
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
        > "$r/etc/apt/apt.conf.d/90hubgrid-no-recommends"
    cat > "$r/etc/dpkg/dpkg.cfg.d/90hubgrid-slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
    find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
    find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$r"/usr/share/man/* "$r"/usr/share/info/*
    find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
    # shellcheck disable=SC2115 # $r is checked non-empty above
    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/cache/apt/*.bin "$r"/var/lib/apt/lists/* \
        "$r"/var/log/* "$r"/dev/* "$r"/tmp/* "$r"/root/.cache
}

build_debian() {
    command -v debootstrap >/dev/null 2>&1 || die "debootstrap missing: run 'bash scripts/start-docker.sh' first"
    local mirror key tarball
    mirror="$(debian_mirror)"
    key="$(printf '%s\n' "debootstrap" "$DEBIAN_RECIPE_VERSION" "$DEBIAN_SUITE" "$DEBIAN_VARIANT" "$DEBIAN_INCLUDE" "$mirror" | sha256)"
    if [[ "$(image_hash "$DEBIAN_IMAGE")" == "$key" ]]; then
        log "$DEBIAN_IMAGE up to date"
        return 0
    fi
    tarball="$CACHE_DIR/debian-$DEBIAN_SUITE-$DEBIAN_VARIANT-${key:0:16}.tar"
    if [[ -s "$tarball" ]]; then
        log "using cached root file system $tarball"
    else
        ROOTFS="$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")"
        log "debootstrap $DEBIAN_SUITE ($DEBIAN_VARIANT + $DEBIAN_INCLUDE) from $mirror"
        debootstrap --variant="$DEBIAN_VARIANT" --include="$DEBIAN_INCLUDE" \
            "$DEBIAN_SUITE" "$ROOTFS" "$mirror" >&2 \
            || die "debootstrap failed; see $ROOTFS/debootstrap/debootstrap.log"
        slim_rootfs "$ROOTFS"
        tar --numeric-owner -C "$ROOTFS" -cf "$tarball.tmp" .
        mv -f "$tarball.tmp" "$tarball"
        cleanup_rootfs
        ROOTFS=""
        # older tarballs of other recipes are of no use any more
        find "$CACHE_DIR" -maxdepth 1 -name "debian-$DEBIAN_SUITE-$DEBIAN_VARIANT-*.tar" ! -name "${tarball##*/}" -delete
    fi
    log "importing $DEBIAN_IMAGE"
    dk import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' \
        --change "LABEL $HASH_LABEL=$key" \
        "$tarball" "$DEBIAN_IMAGE" >/dev/null
}

# ---------------------------------------------------------------- the Lab extension
# build_wheel DIR: the jupyterlab-hubgrid wheel into DIR (empty before), from
# the JS build already in labextension/ (scripts/install.sh makes it)
build_wheel() {
    local out="$1" start=$SECONDS
    [[ -f "$LABEXT_BUILT" ]] \
        || die "the JupyterLab extension is not built ($LABEXT_BUILT missing): run 'bash scripts/install.sh' first"
    [[ -x "$REPO_ROOT/.venv/bin/python" ]] || die "no .venv: run 'bash scripts/install.sh' first"
    "$REPO_ROOT/.venv/bin/python" -c 'import hatchling, hatch_jupyter_builder, hatch_nodejs_version' 2>/dev/null \
        || die "the extension's build tools are missing from .venv: run 'bash scripts/install.sh' first"
    HATCH_JUPYTER_BUILDER_SKIP_NPM=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$REPO_ROOT/.venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation \
        --wheel-dir "$out" "$LABEXT" >&2 \
        || die "building the jupyterlab-hubgrid wheel failed"
    local wheels=("$out"/jupyterlab_hubgrid-*.whl)
    [[ -f "${wheels[0]}" ]] || die "pip wheel left no jupyterlab_hubgrid-*.whl in $out"
    log "wheel ${wheels[0]##*/} ($(sha256sum "${wheels[0]}" | cut -c1-12)) in $((SECONDS - start))s"
}

# ---------------------------------------------------------------- Dockerfiles
# build_dockerfile NAME DIR PARENT WHEELS [--build-arg K=V ...]
# Builds DIR/Dockerfile as NAME with BASE_IMAGE=PARENT (plus extra build args)
# from a temporary context, unless NAME's build hash is current. WHEELS: a
# directory copied into the context as wheels/ ("" for none).
build_dockerfile() {
    local name="$1" dir="$2" parent="$3" wheels="$4"
    shift 4
    local args=(--build-arg "BASE_IMAGE=$parent" "$@")
    local parent_id hash
    parent_id="$(image_id "$FIRST" "$parent")"
    [[ -n "$parent_id" ]] || die "parent image $parent of $name is missing on $FIRST"

    CTX="$(mktemp -d)"
    cp -a "$dir"/. "$CTX"/
    cp "$CA_BUNDLE" "$CTX/ca-certificates.crt"
    install -m 755 "$SESSION_SCRIPT" "$CTX/hubgrid-session"
    install -m 755 "$RELAY_SCRIPT" "$CTX/hubgrid-relay"
    mkdir "$CTX/gpuhook"
    install -m 644 "$GPU_HOOK_DIR/hubgrid_gpu_hook.py" "$GPU_HOOK_DIR/hubgrid-gpu-hook.pth" "$CTX/gpuhook/"
    if [[ -n "$wheels" ]]; then
        mkdir "$CTX/wheels"
        cp "$wheels"/*.whl "$CTX/wheels/"
    fi
    hash="$({
        printf '%s\n' "parent=$parent_id" "${args[@]}"
        (cd "$CTX" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    } | sha256)"

    if [[ "$(image_hash "$name")" == "$hash" ]]; then
        log "$name up to date"
        rm -rf "$CTX"
        CTX=""
        return 0
    fi
    log "building $name from ${dir#"$REPO_ROOT"/} (${args[*]})"
    local start=$SECONDS rc=0
    DOCKER_BUILDKIT=0 dk build --network host --force-rm \
        --label "$HASH_LABEL=$hash" "${args[@]}" -t "$name" "$CTX" >&2 || rc=$?
    rm -rf "$CTX"
    CTX=""
    ((rc == 0)) || die "docker build of $name failed (exit $rc)"
    log "built $name in $((SECONDS - start))s"
}

jupyterhub_version() {
    if [[ -n "${JUPYTERHUB_VERSION:-}" ]]; then
        echo "$JUPYTERHUB_VERSION"; return
    fi
    [[ -x "$REPO_ROOT/.venv/bin/python" ]] \
        || die "no .venv: run 'bash scripts/install.sh' first (or set JUPYTERHUB_VERSION)"
    "$REPO_ROOT/.venv/bin/python" -c 'import importlib.metadata as m; print(m.version("jupyterhub"))' \
        || die "jupyterhub is not installed in .venv: run 'bash scripts/install.sh' first"
}

JH_VERSION="$(jupyterhub_version)"

build_debian
WHEELS="$(mktemp -d)"
build_wheel "$WHEELS"
build_dockerfile "$BASE_IMAGE" "$REPO_ROOT/images/base" "$DEBIAN_IMAGE" "$WHEELS" \
    --build-arg "JUPYTERHUB_VERSION=$JH_VERSION"
build_dockerfile "$INFERENCE_IMAGE" "$REPO_ROOT/images/inference" "$DEBIAN_IMAGE" ""
SESSION_IMAGES=("$BASE_IMAGE")
if [[ "$ALL" == 1 ]]; then
    build_dockerfile "$DATASCIENCE_IMAGE" "$REPO_ROOT/images/datascience" "$BASE_IMAGE" ""
    SESSION_IMAGES=("$DATASCIENCE_IMAGE" "$BASE_IMAGE")
fi

# earlier builds of these images, now untagged
dk image prune -f --filter "label=$HASH_LABEL" >/dev/null || true

# ---------------------------------------------------------------- other hosts
for h in "${HOSTS[@]:1}"; do
    missing=()
    for img in "$INFERENCE_IMAGE" "${SESSION_IMAGES[@]}"; do
        if [[ "$(image_id "$h" "$img")" == "$(image_id "$FIRST" "$img")" ]]; then
            log "$img already on $h"
        else
            missing+=("$img")
        fi
    done
    ((${#missing[@]})) || continue
    log "copying ${missing[*]} to $h"
    dk save "${missing[@]}" | "$DOCKER" -H "$h" load >&2 \
        || die "copying ${missing[*]} to $h failed"
    "$DOCKER" -H "$h" image prune -f --filter "label=$HASH_LABEL" >/dev/null || true
done

printf '%s\n' "$DEBIAN_IMAGE" "$INFERENCE_IMAGE" "${SESSION_IMAGES[@]}"
