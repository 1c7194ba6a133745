#!/usr/bin/env bash
# Start hubgrid on its embedded defaults: JupyterHub at http://127.0.0.1:8000
# with the real configurable-http-proxy, the hubgrid service on SQLite, a
# default domain and project, and a first superadmin.
#
#   bash scripts/run.sh          (normally through `make run`)
#
# HUBGRID_SPAWNER=docker also starts the Docker engine and builds the session
# image (scripts/start-docker.sh, scripts/build-images.sh); =slurm starts the
# single-node Slurm (scripts/start-slurm.sh).
#
# The node of the demo declares $HUBGRID_DEMO_GPUS GPUs (2; 0: none), model
# demo-declared: NOT real devices, so that sessions with GPU shares can be
# tried (demo_service_config.py, docs/admin.md "Demo GPUs").
#
# State (databases, secrets, passwords) lives in $HUBGRID_STATE_DIR (./state).
# The generated passwords are printed on the first start only; they stay in
# the state dir, readable by root alone.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
export HUBGRID_STATE_DIR="${HUBGRID_STATE_DIR:-$REPO_ROOT/state}"
export HUBGRID_ADMIN_USER="${HUBGRID_ADMIN_USER:-admin}"
export PATH="$REPO_ROOT/node_modules/.bin:$PATH"
umask 077
mkdir -p "$HUBGRID_STATE_DIR"

first_start=0
if [[ ! -s "$HUBGRID_STATE_DIR/admin-password" ]]; then
    first_start=1
    # jupyterhub_config.py would create them too; made here to print them once
    .venv/bin/python - <<'PY'
import os
from pathlib import Path
from hub_ext.config import read_or_create_secret
state = Path(os.environ["HUBGRID_STATE_DIR"])
read_or_create_secret(state / "admin-password", 24)
read_or_create_secret(state / "user-password", 12)
PY
fi

url="${HUBGRID_BIND_URL:-http://127.0.0.1:8000}"
if [[ "$first_start" == 1 ]]; then
    cat <<MSG
================================================================
 hubgrid is starting at $url

 superadmin:  $HUBGRID_ADMIN_USER
 password:    $(cat "$HUBGRID_STATE_DIR/admin-password")

 any other user name logs in with the shared user password
              $(cat "$HUBGRID_STATE_DIR/user-password")
 and joins the 'default' domain at first login.

 These passwords are shown once. (They are kept, root-only, in
 $HUBGRID_STATE_DIR/.)
================================================================
MSG
else
    echo "hubgrid is starting at $url (passwords were printed at the first start; see $HUBGRID_STATE_DIR/)"
fi
if [[ "${HUBGRID_SPAWNER:-local}" == local && "$(id -u)" == 0 ]]; then
    echo "WARNING: local sessions run as this hub's user, root: whoever logs in gets a root" \
         "shell here (the passwords in $HUBGRID_STATE_DIR/ too). Try the demo alone, on" \
         "loopback; for more than one person use HUBGRID_SPAWNER=docker or slurm."
fi
if [[ "${HUBGRID_SPAWNER:-local}" == slurm ]]; then
    echo "WARNING: Slurm sessions run as this hub's user, $(id -un): NOT isolated from each" \
         "other (every job reads the others' files, output and session logs). Where hub users" \
         "are Unix users, set c.HubgridSlurmSpawner.unix_users = True (docs/sessions.md," \
         "\"Who a job runs as\")."
fi
if [[ "${HUBGRID_SPAWNER:-local}" == local ]]; then
    echo "Stopping the hub (Ctrl-C) stops the local sessions with it."
else
    echo "Sessions outlive the hub (a restart keeps them): stop them before you stop the hub" \
         "for good (the hub's Home page, or \`hubgrid sessions stop\`)."
fi
demo_gpus="${HUBGRID_DEMO_GPUS:-2}"
if [[ "$demo_gpus" != 0 ]]; then
    echo "demo GPUs: the node declares $demo_gpus GPUs (model demo-declared): NOT real devices," \
         "for trying GPU shares (none where NVML finds real GPUs; HUBGRID_DEMO_GPUS=0: none)"
fi

# the session backend (jupyterhub_config.py): bring up what it needs
case "${HUBGRID_SPAWNER:-local}" in
    docker)
        hosts="$(bash scripts/start-docker.sh | tail -n1)"
        bash scripts/build-images.sh --hosts "$hosts" >/dev/null
        ;;
    slurm)
        HUBGRID_SLURM_PARTITION="$(bash scripts/start-slurm.sh | tail -n1)"
        export HUBGRID_SLURM_PARTITION
        ;;
esac

exec .venv/bin/jupyterhub -f "$REPO_ROOT/jupyterhub_config.py"
