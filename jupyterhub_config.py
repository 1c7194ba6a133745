"""JupyterHub configuration for hubgrid on its embedded defaults.

Everything can be moved with environment variables (all optional):

- HUBGRID_STATE_DIR: where the hub and service keep their state (./state)
- HUBGRID_BIND_URL: public URL of the hub (http://127.0.0.1:8000)
- HUBGRID_HUB_PORT, HUBGRID_PROXY_API_PORT, HUBGRID_SERVICE_PORT,
  HUBGRID_GATEWAY_PORT: internal ports on 127.0.0.1 (8081, 8001, 10101, 10102;
  gateway 0: no serving gateway)
- HUBGRID_DB_URL: the service database (SQLite in the state dir; e.g.
  postgresql+psycopg2://hubgrid:SECRET@127.0.0.1/hubgrid)
- HUBGRID_ADMIN_USER: the first superadmin (admin)
- HUBGRID_SPAWNER: local (default; NOT isolated), docker or slurm
- HUBGRID_DOCKER_URL: the Docker engine of single-host set-ups
- HUBGRID_SERVICE_CONFIG: a config file for the hubgrid service
  (``c.HubgridService.<name> = ...``; see docs/config-reference.md), read
  after demo_service_config.py
- HUBGRID_DEMO_GPUS: how many DECLARED demo GPUs this machine's node gets
  (2; 0: none), model ``demo-declared``: not real devices, so that sessions
  with GPU shares can be tried; see demo_service_config.py
- HUBGRID_DEMO_CPUS: how many CPUs this machine's node DECLARES at least
  (16; 0: the real count), so that a class can try the demo on one machine
  (32 sessions of the demo's default preset, 0.5 CPU); see demo_service_config.py

Passwords (demo authenticator: JupyterHub's shared-password) are generated
into the state dir by scripts/run.sh.
"""

import os
import sys
from pathlib import Path

from hub_ext.config import configure, read_or_create_secret
from hub_ext.proxyrun import proxy_command

c = get_config()  # noqa: F821

state = Path(os.environ.get("HUBGRID_STATE_DIR", "state")).resolve()
state.mkdir(parents=True, exist_ok=True)
admin = os.environ.get("HUBGRID_ADMIN_USER", "admin")

c.JupyterHub.bind_url = os.environ.get("HUBGRID_BIND_URL", "http://127.0.0.1:8000")
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("HUBGRID_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = (
    f"http://127.0.0.1:{os.environ.get('HUBGRID_PROXY_API_PORT', '8001')}"
)
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
# kept-alive connections to isolated sessions' sockets (hub_ext/proxyrun.py)
c.ConfigurableHTTPProxy.command = proxy_command()
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")

backend = os.environ.get("HUBGRID_SPAWNER", "local")
docker_url = os.environ.get("HUBGRID_DOCKER_URL", "unix:///var/run/docker.sock")
demo_gpus = os.environ.get("HUBGRID_DEMO_GPUS", "2").strip()
if not demo_gpus.isdigit() or int(demo_gpus) > 64:
    raise ValueError(f"HUBGRID_DEMO_GPUS={demo_gpus!r}: give a number of GPUs from 0 to 64")
user_service_config = os.environ.get("HUBGRID_SERVICE_CONFIG")
demo_cpus = os.environ.get("HUBGRID_DEMO_CPUS", "16").strip()
if not demo_cpus.isdigit() or int(demo_cpus) > 4096:
    raise ValueError(f"HUBGRID_DEMO_CPUS={demo_cpus!r}: give a number of CPUs from 0 to 4096")
service_env = {
    # the demo's node, its declared CPUs and GPUs and its resource presets
    # (demo_service_config.py), then the service config file named by
    # HUBGRID_SERVICE_CONFIG, if any
    "HUBGRID_DEMO_GPUS": str(int(demo_gpus)),
    "HUBGRID_DEMO_CPUS": str(int(demo_cpus)),
    "HUBGRID_DEMO_SERVICE_CONFIG": str(Path(user_service_config).resolve())
    if user_service_config else "",
}
if backend == "docker":
    # the Docker demo's service scans the engine run.sh started for the
    # session images it built, so the first Start finds them
    service_env["HUBGRID_DOCKER_HOSTS"] = docker_url

configure(
    c,
    state_dir=state,
    service_port=int(os.environ.get("HUBGRID_SERVICE_PORT", "10101")),
    # the serving gateway (0: none)
    gateway_port=int(os.environ.get("HUBGRID_GATEWAY_PORT", "10102")) or None,
    db_url=os.environ.get("HUBGRID_DB_URL") or None,
    bootstrap_superadmin=admin,
    service_config_file=Path(__file__).resolve().parent / "demo_service_config.py",
    environment=service_env,
)

# demo authenticator: one generated password for the superadmin, one shared by
# every other user (who join the default domain at first login)
c.HubgridAuthenticator.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.admin_users = {admin}
c.SharedPasswordAuthenticator.admin_password = read_or_create_secret(state / "admin-password", 24)
c.SharedPasswordAuthenticator.user_password = read_or_create_secret(state / "user-password", 12)

# Sessions (HUBGRID_SPAWNER): ``local`` (default) runs servers as local
# processes for the embedded demo, NOT isolated from each other; ``docker``
# runs each session in a container on the node hubgrid chose (images from
# images/, built by scripts/build-images.sh); ``slurm`` submits each session
# as a Slurm job. hubgrid admits and places every session first.
# A Lab terminal of a session run from this venv (local, slurm) starts bash
# as an interactive, not a login, shell: a login shell reads /etc/profile,
# which sets PATH anew (for root on Debian) and loses the venv, `hubgrid` with it
TERMINAL_KEEPS_PATH = ["--ServerApp.terminado_settings=shell_command=/bin/bash"]
c.JupyterHub.allow_named_servers = True
# Docker and Slurm sessions outlive a hub restart (hubgrid releases those that
# died meanwhile); the local demo's servers are processes of this machine run
# as the hub's user (root under `make run`): they stop with the hub
c.JupyterHub.cleanup_servers = backend == "local"
c.Spawner.default_url = "/lab"
if backend == "docker":
    c.JupyterHub.spawner_class = "hubgrid-docker"
    c.HubgridDockerSpawner.default_docker_url = docker_url
elif backend == "slurm":
    c.JupyterHub.spawner_class = "hubgrid-slurm"
    c.Spawner.cmd = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
    # jobs run from this venv (the Lab extension): its `hubgrid` command is
    # first on a Lab terminal's PATH
    c.Spawner.environment = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    # every resource group runs in the partition start-slurm.sh made
    c.HubgridSlurmSpawner.partitions = {"default": os.environ.get("HUBGRID_SLURM_PARTITION",
                                                                  "batch")}
    c.HubgridSlurmSpawner.job_log_dir = str(state / "slurm-sessions")
    c.HubgridSlurmSpawner.job_home_root = str(state / "slurm-home")
    # an endpoint's replicas run this checkout's model servers on the node
    # (docs/serving.md, "Replicas on Slurm")
    inference = Path(__file__).resolve().parent / "images" / "inference"
    c.HubgridSlurmSpawner.replica_path = [str(inference / "host"), str(inference / "bin")]
    c.Spawner.args = TERMINAL_KEEPS_PATH + (["--allow-root"] if os.geteuid() == 0 else [])
elif backend == "local":
    c.JupyterHub.spawner_class = "hubgrid-local"
    c.Spawner.cmd = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
    # sessions run from this venv, which holds the Lab extension
    # (jupyterlab-hubgrid): its `hubgrid` command is first on a Lab terminal's PATH
    c.Spawner.environment = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    c.Spawner.args = TERMINAL_KEEPS_PATH + (["--allow-root"] if os.geteuid() == 0 else [])
else:
    raise ValueError(f"HUBGRID_SPAWNER={backend!r}: use local, docker or slurm")
