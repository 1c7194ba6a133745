"""A replica on Slurm without Slurm: the spawner's side as plain data
(spawner/slurmreplica.py: the job's command, environment, socket, state),
and hubgrid-replica (spawner/scripts) run for real in namespaces of its own,
as root, as a Slurm job runs it here: the model folder read-only at the mount
point and its own path hidden, the root filesystem read-only, a private
/tmp, its own loopback, the command as the folder's owner with no
capabilities; a node without the mount point refuses with the reason. The
whole path through the hub and Slurm: tests/test_replicas_slurm.py."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from batchspawner import JobStatus
from jupyterhub.spawner import SpawnException
from traitlets import TraitError
from traitlets.config import Configurable

from hub_fixtures import require
from spawner.inference import BRIDGE
from spawner.options import parse_options
from spawner.slurm import HubgridSlurmSpawner
from spawner.slurmreplica import REPLICA_SCRIPT, InferenceSlurmMixin

EID = "0123456789abcdef0123456789abcdef"
ALLOC = "3f1c9d2e-0000-4000-8000-00000000abcd"
SERVICE = {"model": "m", "argv": ["serve", "--port", "8000"], "port": 8000,
           "health_path": "/health", "unix_socket": False}
MOUNT = {"folder": "f1", "name": "echo", "path": "/srv/vfolders/f1", "mode": "ro",
         "target": "/models"}


class FixedEnvBackend(Configurable):
    """Test double of the Slurm spawner beneath the mixin: a fixed session
    environment, nothing applied."""

    base_env = {"JUPYTERHUB_API_TOKEN": "secret", "HUBGRID_API_URL": "http://hub/api",
                "HUBGRID_ALLOCATION": ALLOC, "PATH": "/venv/bin:/usr/bin"}

    def get_env(self):
        return dict(self.base_env)

    def _apply_allocation(self, allocation, opts):
        self.allocation = allocation

    def session_image(self, opts):
        return None

    def cmd_formatted_for_batch(self):
        return "hubgrid-session jupyterhub-singleuser"

    def get_state(self):
        return {"job_id": "7"}

    def load_state(self, state):
        pass

    # a job and its log, as the test sets them
    http_timeout = 30
    server = None
    job_status = JobStatus.RUNNING
    log_text = b""

    async def job_running(self):
        pass

    async def ended_before_start(self):
        return SpawnException("Slurm job 7 ended before its server started", reason="backend")

    async def query_job_status(self):
        return self.job_status

    async def session_log(self, offset):
        return self.log_text[offset:]


class Replica(InferenceSlurmMixin, FixedEnvBackend):
    pass


def applied(service=SERVICE, mounts=(MOUNT,), **config) -> Replica:
    r = Replica(**config)
    opts, _ = parse_options({"session_type": "inference", "endpoint": EID,
                             "image": "hubgrid/inference:latest"})
    r._apply_allocation({"id": ALLOC, "session_type": "inference", "service": service,
                         "mounts": list(mounts)}, opts)
    return r


def test_a_replica_job_runs_hubgrid_replica_with_its_spec_and_no_hub_variable():
    r = applied(replica_path=["/opt/servers/bin"])
    sock = f"/run/hubgrid/slurm-replicas/{ALLOC}/jupyter.sock"
    assert r.cmd_formatted_for_batch() == f"exec python3 -I {REPLICA_SCRIPT}"
    env = r.get_env()
    assert not [k for k in env if k.startswith("JUPYTERHUB_")]
    assert "HUBGRID_API_URL" not in env and env["HUBGRID_ALLOCATION"] == ALLOC
    assert env["PATH"] == "/opt/servers/bin:/venv/bin:/usr/bin"
    assert (env["HUBGRID_SERVICE_PORT"], env["HUBGRID_MODEL_NAME"]) == ("8000", "m")
    assert "HUBGRID_SERVICE_SOCKET" not in env  # a TCP server: bridged
    assert json.loads(env["HUBGRID_REPLICA"]) == {
        "socket_dir": f"/run/hubgrid/slurm-replicas/{ALLOC}", "models": "/srv/vfolders/f1",
        "mount_point": "/models", "argv": [BRIDGE, sock, "8000", "--", "serve", "--port", "8000"]}
    # where the gateway reaches it (the pin in a directory only root writes, never
    # the replica's own name), kept across a restart of the hub
    pin = f"/run/hubgrid/replica-pins/{ALLOC}.sock"
    assert r.get_state()["hubgrid_server_socket"] == pin
    assert r.get_state()["hubgrid_replica_socket"] == sock
    again = Replica()
    again.load_state(r.get_state())
    assert (again.get_state()["hubgrid_server_socket"], again._replica_socket) == (pin, sock)


def test_a_replica_started_before_pins_has_no_pin_and_gives_the_gateway_no_target():
    # its state names its own socket only: the gateway would connect there
    old = Replica()
    old.load_state({"hubgrid_server_socket": f"/run/hubgrid/slurm-replicas/{ALLOC}/jupyter.sock"})
    assert (old._replica_socket, old._replica_pin) == (
        f"/run/hubgrid/slurm-replicas/{ALLOC}/jupyter.sock", "")
    assert old.get_state()["hubgrid_server_socket"] == ""


def test_a_server_that_takes_the_socket_is_told_its_path_on_the_node():
    env = applied(SERVICE | {"unix_socket": True}).get_env()
    assert env["HUBGRID_SERVICE_SOCKET"] == f"/run/hubgrid/slurm-replicas/{ALLOC}/jupyter.sock"
    assert json.loads(env["HUBGRID_REPLICA"])["argv"] == ["serve", "--port", "8000"]


def test_a_session_that_is_no_replica_is_left_as_it_was():
    r = Replica()
    opts, _ = parse_options({"session_type": "interactive"})
    r._apply_allocation({"id": ALLOC, "session_type": "interactive"}, opts)
    assert r.get_env() == FixedEnvBackend.base_env
    assert r.cmd_formatted_for_batch() == "hubgrid-session jupyterhub-singleuser"
    assert "hubgrid_server_socket" not in r.get_state()
    assert r.session_image(opts) is None
    inference, _ = parse_options({"session_type": "inference", "endpoint": EID,
                                  "image": "hubgrid/inference:latest"})
    assert r.session_image(inference) == "hubgrid/inference:latest"  # admission compares it


@pytest.fixture
def short_dir():
    """A directory whose socket path fits AF_UNIX's 108 bytes."""
    path = tempfile.mkdtemp(prefix="hgr-", dir="/tmp")
    yield path
    shutil.rmtree(path)


async def test_a_starting_replica_is_ready_once_its_socket_answers(short_dir):
    r = applied()
    r._replica_socket = f"{short_dir}/jupyter.sock"

    async def answer(reader, writer):  # any HTTP answer below 500: up (the hub's rule)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(answer, r._replica_socket)
    try:
        await asyncio.wait_for(r.job_running(), 20)
    finally:
        server.close()


async def test_a_job_that_ends_before_answering_fails_with_its_last_word(short_dir):
    r = applied()
    r._replica_socket = f"{short_dir}/jupyter.sock"
    r.job_status = JobStatus.NOTFOUND
    r.log_text = b"hubgrid: pre-start: hi\n/bin/sh: 1: exec: nope: not found\n\n"
    with pytest.raises(SpawnException) as e:
        await asyncio.wait_for(r.job_running(), 20)
    assert e.value.message == ("the replica's job ended before its server answered: "
                               "/bin/sh: 1: exec: nope: not found")
    r.log_text = b""
    with pytest.raises(SpawnException, match="answered$"):
        await asyncio.wait_for(r.job_running(), 20)


async def test_a_job_that_ended_before_it_was_seen_running_says_the_same(short_dir):
    """A command that fails at once can end between two polls of the job's
    state (never seen running): a replica's start fails with its last word
    all the same; a session that is no replica keeps the Slurm spawner's."""
    r = applied()
    r.log_text = b"/bin/sh: 1: exec: nope: not found\n"
    assert (await r.ended_before_start()).message == (
        "the replica's job ended before its server answered: /bin/sh: 1: exec: nope: not found")
    plain = Replica()
    opts, _ = parse_options({"session_type": "interactive"})
    plain._apply_allocation({"id": ALLOC, "session_type": "interactive"}, opts)
    assert (await plain.ended_before_start()).message == (
        "Slurm job 7 ended before its server started")


async def test_a_replica_silent_past_http_timeout_fails_the_start(short_dir):
    r = applied()
    r._replica_socket = f"{short_dir}/jupyter.sock"
    r.http_timeout = 1
    with pytest.raises(SpawnException, match=r"did not answer within 1 s \(http_timeout\)"):
        await asyncio.wait_for(r.job_running(), 20)


async def test_a_session_that_is_no_replica_does_not_wait():
    r = Replica()
    opts, _ = parse_options({"session_type": "interactive"})
    r._apply_allocation({"id": ALLOC, "session_type": "interactive"}, opts)
    await asyncio.wait_for(r.job_running(), 5)


@pytest.mark.parametrize("service, mounts", [(None, (MOUNT,)), (SERVICE, ()),
                                             (SERVICE, ({"folder": "f1"},)),
                                             (SERVICE, (MOUNT, MOUNT))])
def test_a_replica_without_its_command_or_its_one_folder_is_refused(service, mounts):
    with pytest.raises(SpawnException, match="no start command or model folder") as e:
        applied(service, mounts)
    assert e.value.status_code == 400


@pytest.mark.parametrize("root, why", [("/tmp/replicas", "not under /tmp"),
                                       ("/run/Replicas", "lowercase"), ("run/x", "absolute")])
def test_the_socket_root_is_absolute_lowercase_and_not_under_tmp(root, why):
    with pytest.raises(TraitError, match=why):
        Replica(replica_socket_root=root)


def test_the_slurm_spawner_runs_replicas():
    assert HubgridSlurmSpawner.runs_inference is True
    assert HubgridSlurmSpawner().replica_socket_root == "/run/hubgrid/slurm-replicas"


# -- hubgrid-replica itself, in real namespaces ---------------------------------

def run_replica(spec: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "HUBGRID_REPLICA": json.dumps(spec)}
    return subprocess.run([sys.executable, "-I", str(REPLICA_SCRIPT)], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def sandbox(tmp_path):
    require("root and util-linux's unshare (as slurmd runs jobs here)",
            os.geteuid() == 0 and shutil.which("unshare") is not None
            and shutil.which("setpriv") is not None and os.path.isdir("/models"),
            "run as root on a node made by scripts/start-slurm.sh")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "model-definition.yaml").write_text("models: []\n")
    os.chown(folder, 1000, 100)  # a vfolder: owned by the sessions' uid (vfolder_uid)
    sockets = f"/run/hubgrid/test-replica-{uuid.uuid4().hex[:8]}"
    yield folder, f"{sockets}/{uuid.uuid4().hex}"
    shutil.rmtree(sockets, ignore_errors=True)


PROBES = r"""
touch /models/x 2>/dev/null || echo "models: read-only"
cat /models/model-definition.yaml
ls "$1" 2>/dev/null | grep -q . || echo "folder's own path: hidden"
touch /etc/hubgrid-probe 2>/dev/null || echo "root: read-only"
echo tmp > /tmp/x && echo "tmp: $(cat /tmp/x) home=$HOME"
echo "uid: $(id -u) caps: $(grep CapEff /proc/self/status | cut -f2)"
python3 -c 'import socket, sys
s = socket.socket(); s.settimeout(2)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); print("host loopback: reached")
except OSError:
    print("host loopback: not reached")
u = socket.socket(socket.AF_UNIX); u.bind(sys.argv[2] + "/jupyter.sock"); print("socket: made")
o = socket.socket(socket.AF_UNIX)
try:
    o.connect(sys.argv[3]); print("other replica: reached")
except OSError:
    print("other replica: not reached")
' "$2" "$3" "$4"
echo "beside it: $(ls "$(dirname "$3")")"
"""


def test_the_replica_sees_its_folder_read_only_and_little_else(sandbox):
    folder, sockets = sandbox
    host = socket.socket()  # a listener on the host's loopback
    host.bind(("127.0.0.1", 0))
    host.listen()
    # another replica's directory beside it, of the same uid, with its socket
    other_dir = os.path.join(os.path.dirname(sockets), "other")
    os.makedirs(other_dir, mode=0o700)
    os.chown(other_dir, 1000, 100)
    other = socket.socket(socket.AF_UNIX)
    other.bind(f"{other_dir}/jupyter.sock")
    os.chown(f"{other_dir}/jupyter.sock", 1000, 100)
    other.listen()
    try:
        done = run_replica({"socket_dir": sockets, "models": str(folder), "mount_point": "/models",
                            "argv": ["/bin/sh", "-c", PROBES, "probe", str(folder),
                                     str(host.getsockname()[1]), sockets,
                                     f"{other_dir}/jupyter.sock"]})
    finally:
        host.close()
        other.close()
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out == ["models: read-only", "models: []", "folder's own path: hidden",
                   "root: read-only", "tmp: tmp home=/tmp", "uid: 1000 caps: 0000000000000000",
                   "host loopback: not reached", "socket: made", "other replica: not reached",
                   f"beside it: {os.path.basename(sockets)}"], done.stdout + done.stderr
    made = os.stat(f"{sockets}/jupyter.sock")  # where the hub and the gateway connect
    assert stat.S_ISSOCK(made.st_mode) and made.st_uid == 1000
    assert stat.S_IMODE(os.stat(sockets).st_mode) == 0o700
    assert not (folder / "x").exists() and os.listdir(folder) == ["model-definition.yaml"]


def test_a_node_without_the_mount_point_or_the_folder_refuses_with_the_reason(sandbox):
    folder, sockets = sandbox
    spec = {"socket_dir": sockets, "models": str(folder), "mount_point": "/no-such-models",
            "argv": ["true"]}
    done = run_replica(spec)
    assert done.returncode == 70
    assert "the node has no directory /no-such-models to mount the model folder on" in done.stderr
    done = run_replica(spec | {"mount_point": "/models", "models": str(folder / "gone")})
    assert done.returncode == 70 and "is not on this node" in done.stderr
    done = run_replica(spec | {"socket_dir": "relative/dir", "mount_point": "/models"})
    assert done.returncode == 70 and "is not an absolute path" in done.stderr
    done = subprocess.run([sys.executable, "-I", str(REPLICA_SCRIPT)], capture_output=True,
                          text=True, env={"PATH": os.environ["PATH"]})
    assert done.returncode == 70 and "$HUBGRID_REPLICA is missing" in done.stderr


def test_a_requeued_job_runs_again_and_a_foreign_socket_directory_is_refused(sandbox):
    folder, sockets = sandbox
    spec = {"socket_dir": sockets, "models": str(folder), "mount_point": "/models",
            "argv": ["true"]}
    assert run_replica(spec).returncode == 0
    assert os.stat(sockets).st_uid == 1000  # the folder's owner's, who runs the server
    again = run_replica(spec)  # Slurm requeued the job: its directory is there
    assert again.returncode == 0, again.stderr
    shutil.rmtree(sockets)
    os.symlink("/etc", sockets)  # planted: never followed
    done = run_replica(spec)
    assert done.returncode == 70 and "exists and is not this user's directory" in done.stderr
    os.unlink(sockets)


@pytest.fixture
def open_dir():
    """A directory every user may enter (pytest's tmp_path is root's alone)."""
    path = tempfile.mkdtemp(prefix="hubgrid-replica-")
    os.chmod(path, 0o755)
    yield Path(path)
    shutil.rmtree(path)


def test_a_job_of_a_users_own_account_gets_the_same_in_a_user_namespace(sandbox, open_dir):
    """unix_users: the job runs as the user's account, not root; the
    namespaces are made in a user namespace (its root mapped to the account)
    and the replica holds no capability there either."""
    folder, sockets = sandbox
    nobody = 65534
    # a kernel without them fails in CI (hub_fixtures.require), never passes by skipping
    require("user namespaces for other users",
            subprocess.run(["setpriv", "--reuid", str(nobody), "--regid", str(nobody),
                            "--clear-groups", "unshare", "--user", "--map-root-user", "true"],
                           capture_output=True).returncode == 0,
            "a kernel with unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)")
    root = os.path.dirname(sockets)
    os.makedirs(root, exist_ok=True)
    os.chmod(root, 0o1777)  # each user makes their replica's directory there
    readable = open_dir / "readable"
    shutil.copytree(folder, readable / "folder")
    for p in (readable, readable / "folder"):
        os.chmod(p, 0o755)
    os.chmod(readable / "folder" / "model-definition.yaml", 0o644)
    script = ('touch /models/x 2>/dev/null || echo "models: read-only"; cat /models/*; '
              'touch /etc/hubgrid-probe 2>/dev/null || echo "root: read-only"; '
              'mount -o remount,rw,bind /models 2>/dev/null || echo "remount: refused"; '
              'echo "caps: $(grep CapEff /proc/self/status | cut -f2)"')
    spec = {"socket_dir": sockets, "models": str(readable / "folder"), "mount_point": "/models",
            "argv": ["/bin/sh", "-c", script]}
    python = "/usr/bin/python3"  # one the account may run (the venv's is under /root)
    require("a python3 every user may run", os.access(python, os.X_OK), "install python3")
    done = subprocess.run(["setpriv", "--reuid", str(nobody), "--regid", str(nobody),
                           "--clear-groups", python, "-I", str(REPLICA_SCRIPT)],
                          env={"PATH": os.environ["PATH"], "HUBGRID_REPLICA": json.dumps(spec)},
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["models: read-only", "models: []", "root: read-only",
                                        "remount: refused", "caps: 0000000000000000"], done.stderr
    assert os.stat(sockets).st_uid == nobody
    assert os.listdir(readable / "folder") == ["model-definition.yaml"]
