#!/usr/bin/env bash
# Start the local Docker engine(s) hubgrid's tests place sessions on (idempotent;
# a second run only checks that every engine answers).
#
#   bash scripts/start-docker.sh [--engines N]
#
# - installs the Debian packages docker.io and debootstrap (apt) when missing
# - engine 1: the default socket unix:///var/run/docker.sock
# - engines 2..N (--engines, default 1): side by side on the same machine, each
#   with its own socket, data root, exec root and pid file under
#   /run/hubgrid-docker-K and /var/lib/hubgrid-docker-K, so tests can place
#   sessions on several "nodes"
# - every engine runs with --bridge=none --iptables=false --ip-masq=false: no
#   docker0 bridge (private-range addresses) exists; containers use host
#   networking and talk to loopback only
#
# Progress goes to stderr; the last line of stdout is the comma-separated list
# of the engines' docker host URLs, e.g.
#   unix:///var/run/docker.sock,unix:///run/hubgrid-docker-2/docker.sock
# Logs: /var/log/hubgrid-dockerd.log (engine 1), /var/log/hubgrid-dockerd-K.log.
# Stop engine K (K >= 2): kill "$(cat /run/hubgrid-docker-K/docker.pid)".
# Needs root.
set -euo pipefail

WAIT_SECONDS=60
DOCKERD=/usr/sbin/dockerd
# Debian's client; /usr/local/bin/docker on these machines is a separate client only.
DOCKER=/usr/bin/docker
DOCKERD_NET_FLAGS=(--bridge=none --iptables=false --ip-masq=false)
MAIN_HOST=unix:///var/run/docker.sock
MAIN_PIDFILE=/var/run/docker.pid

log() { printf '[docker] %s\n' "$*" >&2; }
die() { printf '[docker] ERROR: %s\n' "$*" >&2; exit 1; }

usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

ENGINES=1
while (($#)); do
    case "$1" in
        --engines) [[ $# -ge 2 ]] || die "--engines needs a number"; ENGINES="$2"; shift 2 ;;
        --engines=*) ENGINES="${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument: $1 (usage: $0 [--engines N])" ;;
    esac
done
[[ "$ENGINES" =~ ^[1-9][0-9]*$ ]] || die "--engines must be a positive integer, got '$ENGINES'"
[[ "$(id -u)" == 0 ]] || die "must run as root (it installs packages and starts dockerd)"

# ---------------------------------------------------------------- packages
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # apt_install

missing=()
[[ -x "$DOCKERD" && -x "$DOCKER" ]] || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if ((${#missing[@]})); then
    log "installing ${missing[*]} (apt)"
    apt_install "${missing[@]}" || die "apt-get install ${missing[*]} failed"
    [[ -x "$DOCKERD" && -x "$DOCKER" ]] || die "docker.io did not install $DOCKERD and $DOCKER"
else
    log "docker.io and debootstrap already installed"
fi

# ---------------------------------------------------------------- engines
answers() { "$DOCKER" -H "$1" info >/dev/null 2>&1; }

pid_alive() {  # pidfile -> 0 when it names a running dockerd
    local pid
    pid="$(cat "$1" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" == dockerd ]]
}

# start_engine HOST PIDFILE LOGFILE [extra dockerd args...]
start_engine() {
    local host="$1" pidfile="$2" logfile="$3"
    shift 3
    if answers "$host"; then
        log "engine $host already running"
        return 0
    fi
    if pid_alive "$pidfile"; then
        # started by an earlier run that is still coming up: just wait for it
        log "engine $host is starting (pid $(cat "$pidfile")); waiting for it"
        return 0
    fi
    log "starting engine $host (log: $logfile)"
    setsid "$DOCKERD" "${DOCKERD_NET_FLAGS[@]}" "$@" >"$logfile" 2>&1 < /dev/null &
    disown || true
}

HOSTS=("$MAIN_HOST")
LOGS=(/var/log/hubgrid-dockerd.log)
start_engine "$MAIN_HOST" "$MAIN_PIDFILE" "${LOGS[0]}"

for ((k = 2; k <= ENGINES; k++)); do
    # Exec roots stay short: containerd's and the shims' unix sockets live
    # below them, and a unix socket path is limited to 107 bytes.
    run_dir="/run/hubgrid-docker-$k"
    host="unix://$run_dir/docker.sock"
    logfile="/var/log/hubgrid-dockerd-$k.log"
    mkdir -p "$run_dir" "/var/lib/hubgrid-docker-$k"
    start_engine "$host" "$run_dir/docker.pid" "$logfile" \
        --host "$host" \
        --data-root "/var/lib/hubgrid-docker-$k" \
        --exec-root "$run_dir/exec" \
        --pidfile "$run_dir/docker.pid"
    HOSTS+=("$host")
    LOGS+=("$logfile")
done

deadline=$((SECONDS + WAIT_SECONDS))
for i in "${!HOSTS[@]}"; do
    until answers "${HOSTS[$i]}"; do
        if ((SECONDS >= deadline)); then
            tail -n 20 "${LOGS[$i]}" >&2 2>/dev/null || true
            die "engine ${HOSTS[$i]} did not answer 'docker info' within ${WAIT_SECONDS}s; see ${LOGS[$i]}"
        fi
        sleep 0.5
    done
    # An engine started elsewhere may still have the default bridge: say so,
    # since hubgrid's containers must never use it.
    if "$DOCKER" -H "${HOSTS[$i]}" network inspect bridge >/dev/null 2>&1; then
        log "WARNING: engine ${HOSTS[$i]} has a 'bridge' network (docker0); it was not started by this script with --bridge=none. hubgrid uses host networking only."
    fi
    log "engine ${HOSTS[$i]} ready ($("$DOCKER" -H "${HOSTS[$i]}" info -f '{{.ServerVersion}}, {{.Driver}}, cgroup {{.CgroupDriver}}' 2>/dev/null || echo '?'))"
done

(IFS=,; echo "${HOSTS[*]}")
