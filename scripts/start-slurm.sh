#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine for hubgrid's batch
# spawner tests (idempotent; a second run checks the daemons and runs one tiny
# job, a few seconds).
#
#   bash scripts/start-slurm.sh [--check]
#
# - installs the Debian packages slurm-wlm and munge (apt) when missing, and
#   sudo (jobs submitted as their users: c.HubgridSlurmSpawner.unix_users)
# - writes /etc/slurm/slurm.conf (cluster "hubgrid", this host as its only node,
#   partition "batch"); when the content changed, running daemons are restarted
# - munge key /etc/munge/munge.key (created when missing; munge:munge, mode 400)
# - starts munged (as user munge), slurmctld and slurmd when not running, waits
#   for the node to be idle (a down/drained node is resumed)
# - makes /models, empty: where an endpoint's replica sees its model folder
# - checks that an sbatch job runs to completion: when this run changed or
#   started anything, or with --check (a run that finds everything up skips it)
# All Slurm traffic goes to 127.0.0.1 (SlurmctldHost and NodeAddr).
#
# Progress goes to stderr; the last line of stdout is the partition: batch
# Logs: /var/log/slurm/slurmctld.log, /var/log/slurm/slurmd.log, /var/log/munge/.
# Needs root.
set -euo pipefail

PARTITION="batch"
CONF=/etc/slurm/slurm.conf
MUNGE_KEY=/etc/munge/munge.key
MUNGE_RUN=/run/munge
STATE_DIR=/var/spool/slurmctld
SPOOL_DIR=/var/spool/slurmd
LOG_DIR=/var/log/slurm
CTLD_PIDFILE=/run/slurmctld.pid
SLURMD_PIDFILE=/run/slurmd.pid
WAIT_SECONDS=60

log() { printf '[slurm] %s\n' "$*" >&2; }
die() { printf '[slurm] ERROR: %s\n' "$*" >&2; exit 1; }

CHECK=0
for arg in "$@"; do
    case "$arg" in
        --check) CHECK=1 ;;
        -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg (usage: $0 [--check])" ;;
    esac
done
[[ "$(id -u)" == 0 ]] || die "must run as root (it installs packages and starts the Slurm daemons)"

# ---------------------------------------------------------------- packages
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # apt_install

have_binaries() {
    local b
    for b in slurmctld slurmd sbatch sinfo scontrol munged munge mungekey; do
        command -v "$b" >/dev/null 2>&1 || [[ -x "/usr/sbin/$b" ]] || return 1
    done
}
if have_binaries; then
    log "slurm-wlm and munge already installed"
else
    log "installing slurm-wlm and munge (apt)"
    apt_install slurm-wlm munge || die "apt-get install slurm-wlm munge failed"
    have_binaries || die "slurm-wlm/munge did not install the expected programs"
fi
if command -v sudo >/dev/null 2>&1; then
    log "sudo already installed"
else
    log "installing sudo (apt), for jobs submitted as their users (unix_users)"
    apt_install sudo || die "apt-get install sudo failed"
fi
PATH="$PATH:/usr/sbin:/sbin"

# ---------------------------------------------------------------- processes
# pids_of NAME: pids of running processes whose command name is NAME (no procps needed)
pids_of() {
    local d comm
    for d in /proc/[0-9]*; do
        { read -r comm < "$d/comm"; } 2>/dev/null || continue
        [[ "$comm" == "$1" ]] && printf '%s\n' "${d#/proc/}"
    done
    return 0
}
running() { [[ -n "$(pids_of "$1")" ]]; }

# stop NAME: TERM, wait up to 20 s, then KILL
stop() {
    local pids i
    mapfile -t pids < <(pids_of "$1")
    ((${#pids[@]})) || return 0
    log "stopping $1 (pid ${pids[*]})"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        running "$1" || return 0
        sleep 0.2
    done
    log "$1 did not stop within 20s; killing it"
    mapfile -t pids < <(pids_of "$1")
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 0.5
}

# wait_for SECONDS CMD...: until CMD succeeds (1 when SECONDS passed)
wait_for() {
    local seconds="$1" deadline
    shift
    deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

# ---------------------------------------------------------------- slurm.conf
NODE="$(hostname -s)"
CPUS="$(nproc)"
MEM_KB="$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
REAL_MEM=$((MEM_KB / 1024 - 2048))
((REAL_MEM > 0)) || die "too little memory for a Slurm node (MemTotal ${MEM_KB} kB)"

render_conf() {
    cat <<EOF
# Written by scripts/start-slurm.sh (hubgrid): a single-node test cluster.
# Edits are overwritten; change the script instead.
ClusterName=hubgrid
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
StateSaveLocation=$STATE_DIR
SlurmdSpoolDir=$SPOOL_DIR
SlurmctldPidFile=$CTLD_PIDFILE
SlurmdPidFile=$SLURMD_PIDFILE
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# without a default, a job asking no memory would hold the whole node
DefMemPerCPU=1024
ReturnToService=2
MinJobAge=600
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REAL_MEM State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

mkdir -p /etc/slurm "$STATE_DIR" "$SPOOL_DIR" "$LOG_DIR"
# the mount point of an endpoint replica's model folder (hubgrid-replica binds
# the folder there, read-only, in the replica's own mount namespace; the
# directory itself stays empty: docs/serving.md, "Replicas on Slurm")
mkdir -p /models
CONF_CHANGED=0
if [[ "$(render_conf)" == "$(cat "$CONF" 2>/dev/null || true)" ]]; then
    log "$CONF up to date"
else
    log "writing $CONF (node $NODE: $CPUS CPUs, ${REAL_MEM} MB)"
    render_conf > "$CONF.tmp"
    chmod 644 "$CONF.tmp"
    mv -f "$CONF.tmp" "$CONF"
    CONF_CHANGED=1
fi

# ---------------------------------------------------------------- munge
KEY_CHANGED=0
STARTED=0  # anything (re)started or changed: then the smoke job runs
if [[ ! -s "$MUNGE_KEY" ]]; then
    log "creating munge key $MUNGE_KEY"
    mkdir -p "$(dirname "$MUNGE_KEY")"
    rm -f "$MUNGE_KEY"
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$MUNGE_KEY" >&2
    else
        create-munge-key -f >&2
    fi
    KEY_CHANGED=1
fi
chown munge:munge "$(dirname "$MUNGE_KEY")" "$MUNGE_KEY"
chmod 700 "$(dirname "$MUNGE_KEY")"
chmod 400 "$MUNGE_KEY"

munge_works() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

if [[ "$KEY_CHANGED" == 1 ]]; then
    stop munged
fi
if running munged && munge_works; then
    log "munged already running"
else
    stop munged
    log "starting munged"
    install -d -o munge -g munge -m 755 "$MUNGE_RUN"
    install -d -o munge -g munge -m 700 /var/log/munge
    install -d -o munge -g munge -m 711 /var/lib/munge
    STARTED=1
    runuser -u munge -- munged >&2 || die "munged did not start; see /var/log/munge/munged.log"
    wait_for 20 munge_works || die "munge does not work; see /var/log/munge/munged.log"
fi

# ---------------------------------------------------------------- slurm daemons
if [[ "$CONF_CHANGED" == 1 || "$KEY_CHANGED" == 1 ]]; then
    # a changed node definition needs both daemons restarted, not a reconfigure
    stop slurmd
    stop slurmctld
fi

ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }

if running slurmctld; then
    log "slurmctld already running"
else
    log "starting slurmctld"
    STARTED=1
    slurmctld >&2 || die "slurmctld did not start; see $LOG_DIR/slurmctld.log"
fi
wait_for "$WAIT_SECONDS" ctld_up \
    || die "slurmctld does not answer 'scontrol ping'; see $LOG_DIR/slurmctld.log"

if running slurmd; then
    log "slurmd already running"
else
    log "starting slurmd"
    STARTED=1
    slurmd >&2 || die "slurmd did not start; see $LOG_DIR/slurmd.log"
fi

# ---------------------------------------------------------------- node state
node_state() { sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n1; }
deadline=$((SECONDS + WAIT_SECONDS))
last_resume=-100
while :; do
    state="$(node_state)"
    case "$state" in
        idle|mixed|allocated|completing|planned) break ;;
        down|drain|drained|draining|fail|failing)
            if ((SECONDS - last_resume >= 5)); then
                log "node $NODE is $state ($(sinfo -h -N -n "$NODE" -o %E 2>/dev/null | head -n1)); resuming it"
                scontrol update nodename="$NODE" state=resume >&2 || true
                last_resume=$SECONDS
                STARTED=1
            fi
            ;;
        # empty, unknown, or a trailing * (not responding yet): wait
    esac
    if ((SECONDS >= deadline)); then
        die "node $NODE is '${state:-?}' after ${WAIT_SECONDS}s, not idle; see $LOG_DIR/slurmd.log and $LOG_DIR/slurmctld.log"
    fi
    sleep 0.5
done
log "node $NODE is $state"
if [[ "$STARTED" == 0 && "$CONF_CHANGED" == 0 && "$CHECK" == 0 ]]; then
    log "everything was already up; skipping the test job (--check runs it)"
    echo "$PARTITION"
    exit 0
fi

# ---------------------------------------------------------------- smoke job
CHECK_DIR="$(mktemp -d /tmp/hubgrid-slurm-check.XXXXXX)"
trap 'rm -rf "$CHECK_DIR"' EXIT
chmod 755 "$CHECK_DIR"
# shellcheck disable=SC2016 # $SLURM_JOB_ID is expanded by the job
printf '#!/bin/sh\necho "hubgrid-slurm-ok $SLURM_JOB_ID"\n' > "$CHECK_DIR/job.sh"
job_id="$(sbatch --parsable --partition="$PARTITION" --job-name=hubgrid-check \
    --ntasks=1 --cpus-per-task=1 --mem=16 --time=1 \
    --chdir="$CHECK_DIR" --output="$CHECK_DIR/job.out" "$CHECK_DIR/job.sh")" \
    || die "sbatch failed"
job_id="${job_id%%;*}"
deadline=$((SECONDS + WAIT_SECONDS))
while :; do
    job_state="$(scontrol show job -o "$job_id" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true)"
    case "$job_state" in
        COMPLETED) break ;;
        FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)
            die "test job $job_id ended $job_state: $(cat "$CHECK_DIR/job.out" 2>/dev/null)" ;;
    esac
    if ((SECONDS >= deadline)); then
        scancel "$job_id" 2>/dev/null || true
        die "test job $job_id is still ${job_state:-unknown} after ${WAIT_SECONDS}s; see $LOG_DIR/slurmctld.log"
    fi
    sleep 0.2
done
grep -q "^hubgrid-slurm-ok $job_id\$" "$CHECK_DIR/job.out" \
    || die "test job $job_id completed but wrote: $(cat "$CHECK_DIR/job.out" 2>/dev/null)"
log "test job $job_id completed; partition $PARTITION ready"

echo "$PARTITION"
