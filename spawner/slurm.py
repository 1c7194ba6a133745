"""HubgridSlurmSpawner: batchspawner's SlurmSpawner with hubgrid admission.

The hubgrid service admits the session first; then the session is a Slurm
batch job in the partition mapped to its resource group, asking for the
allocation's cpu and memory; a job with GPUs runs on the ledger's node with
the ledger's devices in its environment (``gpu_gres``, docs/gpus.md). The job runs
``hubgrid-session`` (spawner/scripts), which starts the Jupyter server and,
for a batch session, the user's command; its output goes to a file the
spawner sends to the service as the session log.

Unlike batchspawner's default, the port is chosen by the spawner when it
submits the job (no ``batchspawner-singleuser`` and no extra hub API handler),
and the user's options never reach the batch script template: the command of
a batch session travels in the job's environment.
"""

from __future__ import annotations

import asyncio
import os
import pwd
from decimal import Decimal
from pathlib import Path

from batchspawner import JobStatus, SlurmSpawner
from jupyterhub.spawner import SpawnException
from jupyterhub.utils import random_port
from traitlets import Dict, Enum, Integer, Unicode, default

from .builders import SLURM_GPU_GRES, reapplied_gpu_environment, slurm_request
from .gpuenv import allocation_gpus
from .mixin import HubgridSpawnerMixin, read_from

SESSION_SCRIPT = Path(__file__).parent / "scripts" / "hubgrid-session"

BATCH_SCRIPT = """#!/bin/bash
#SBATCH --output={{output}}
#SBATCH --job-name=hubgrid-{{username}}
{% if allocation %}#SBATCH --comment=hubgrid-allocation={{allocation}}
{% endif %}#SBATCH --chdir={{homedir}}
#SBATCH --export={{keepvars}}
{% if partition %}#SBATCH --partition={{partition}}
{% endif %}{% if runtime %}#SBATCH --time={{runtime}}
{% endif %}{% if memory %}#SBATCH --mem={{memory}}
{% endif %}{% if gres %}#SBATCH --gres={{gres}}
{% endif %}{% if nodelist %}#SBATCH --nodelist={{nodelist}}
{% endif %}{% if nprocs %}#SBATCH --cpus-per-task={{nprocs}}
{% endif %}{% if options %}#SBATCH {{options}}
{% endif %}
# the ledger's GPU variables, again after Slurm's own set-up (HUBGRID_GPUENV_*)
eval "$(python3 -c 'import os, shlex
for k, v in sorted(os.environ.items()):
    if k.startswith("HUBGRID_GPUENV_"):
        print("export %s=%s" % (k[15:], shlex.quote(v)))')"
{{prologue}}
{{cmd}}
"""


class SlurmJobSpawner(SlurmSpawner):
    """SlurmSpawner that picks its server's port itself (see module doc)."""

    job_ip = Unicode(
        "127.0.0.1",
        help="""Address the job's server listens on. ``127.0.0.1`` when the
        hub and the Slurm node are one machine; ``0.0.0.0`` for a cluster
        (the hub then connects to the execution host Slurm reports).""",
    ).tag(config=True)

    job_log_dir = Unicode(
        "slurm-sessions",
        help="""Directory (on a filesystem the hub and the nodes share) for the
        jobs' output and exit-code files; relative to the hub's directory.""",
    ).tag(config=True)

    job_home_root = Unicode(
        "slurm-home",
        help="""Working directory root for users without a Unix account
        (``<root>/<user>``); users with one start in their home.""",
    ).tag(config=True)

    @default("exec_prefix")
    def _default_exec_prefix(self):
        # hub users need not be Unix users; a site whose users are sets
        # c.HubgridSlurmSpawner.exec_prefix = "sudo -E -u {username}"
        return ""

    @default("req_srun")
    def _default_srun(self):
        return ""

    @default("batch_script")
    def _default_batch_script(self):
        return BATCH_SCRIPT

    @default("req_homedir")
    def _default_homedir(self):
        try:
            return pwd.getpwnam(self.user.name).pw_dir
        except KeyError:
            home = Path(self.job_home_root).resolve() / self.user.name
            home.mkdir(parents=True, exist_ok=True, mode=0o700)
            return str(home)

    def user_env(self, env):
        env["USER"] = self.user.name
        env["HOME"] = self.req_homedir
        return env

    def cmd_formatted_for_batch(self):
        return " ".join([str(SESSION_SCRIPT), *self.cmd, *self.get_args()])

    async def _get_batch_script(self, **subvars):
        # only our own values: batchspawner mixes user_options into subvars
        own = {**self.get_req_subvars(), "cmd": subvars["cmd"], "username": self.user.name,
               "output": self.job_output_file(),
               # the job names its allocation (hubgrid-admin reconcile reads it back)
               "allocation": getattr(self, "allocation_id", None) or ""}
        return await super()._get_batch_script(**own)

    def job_output_file(self) -> str:
        raise NotImplementedError

    async def start(self):
        self.port = random_port()
        self.ip = self.job_ip
        if self.server:
            self.server.port = self.port
        try:
            await self.submit_batch_script()
        except RuntimeError as e:
            raise SpawnException(f"Slurm refused the job: {e}", reason="backend") from None
        if not self.job_id:
            raise SpawnException("Slurm gave no job id", reason="backend")
        while True:
            status = await self.query_job_status()
            if status == JobStatus.RUNNING:
                break
            if status not in (JobStatus.PENDING, JobStatus.UNKNOWN):
                raise SpawnException(f"Slurm job {self.job_id} ended before its server started",
                                     reason="backend")
            await asyncio.sleep(self.startup_poll_interval)
        host = self.state_gethost() if self.job_ip == "0.0.0.0" else self.job_ip
        return host, self.port


class HubgridSlurmSpawner(HubgridSpawnerMixin, SlurmJobSpawner):
    """Sessions as Slurm jobs, admitted and accounted by hubgrid."""

    @default("check_shares_at_start")
    def _default_check_shares_at_start(self):
        return False  # the job's node is not the hub's machine

    partitions = Dict(
        key_trait=Unicode(), value_trait=Unicode(),
        help="""Slurm partition of each resource group, e.g.
        ``c.HubgridSlurmSpawner.partitions = {"default": "batch"}``. A group
        not listed runs in the partition of the same name.""",
    ).tag(config=True)

    shards_per_gpu = Integer(
        100,
        help="""Shards per GPU that slurm.conf declares (``Gres=shard:N``);
        a GPU share asks for that fraction of them (``gpu_gres = "count"``).""",
    ).tag(config=True)

    gpu_gres = Enum(
        list(SLURM_GPU_GRES),
        "none",
        help="""What a job with GPUs asks of Slurm. The ledger names the devices
        either way: the job runs on the ledger's node (``--nodelist``; Slurm
        node names are hubgrid node names) with the ledger's devices in
        ``CUDA_VISIBLE_DEVICES``. ``none``: no GPU GRES (the partition's GPUs
        are hubgrid's alone). ``count``: also ``--gres=gpu:N`` /
        ``shard:K`` so that Slurm accounts for them; then slurm.conf must not
        constrain devices (``ConstrainDevices=no``), since Slurm's own pick
        can differ from the ledger's. See docs/gpus.md.""",
    ).tag(config=True)

    req_nodelist = Unicode("", help="The ledger's node of a job with GPUs (set per job).")

    def job_output_file(self) -> str:
        return str(self._job_file("log"))

    def _job_file(self, ext: str) -> Path:
        directory = Path(self.job_log_dir).resolve()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        return directory / f"{self.allocation_id}.{ext}"

    def _apply_allocation(self, allocation, opts):
        super()._apply_allocation(allocation, opts)
        gpus = allocation_gpus(allocation["gpus"])
        slots = {k: Decimal(v) for k, v in allocation["slots"].items()}
        rg = allocation["resource_group"]
        req = slurm_request(slots.get("cpu", Decimal(1)), int(slots.get("mem", 0)), gpus,
                            self.partitions.get(rg, rg), self.shards_per_gpu,
                            allocation.get("node") or "", self.gpu_gres)
        self.req_partition, self.req_nprocs = req["partition"], req["nprocs"]
        self.req_memory, self.req_gres = req["memory"], req["gres"]
        self.req_nodelist = req["nodelist"]
        # the ledger's devices (session_env: gpu_environment, host place),
        # again after Slurm's own set-up (hubgrid-session)
        env = {**self.session_env, **reapplied_gpu_environment(self.session_env)}
        if allocation["session_type"] == "batch":
            env["HUBGRID_EXIT_FILE"] = str(self._job_file("exit"))
            env["HUBGRID_BATCH_GO_FILE"] = str(self._job_file("go"))
        self.session_env = env
        self.req_keepvars = ",".join(self.get_env())

    async def batch_go(self) -> None:
        self._job_file("go").touch()

    async def session_log(self, offset: int) -> bytes:
        return read_from(self._job_file("log"), offset)

    async def session_exit_code(self) -> int | None:
        try:
            return int(self._job_file("exit").read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    async def session_ended(self) -> None:
        await super().session_ended()
        log = self._job_file("log")
        sent = not log.exists() or log.stat().st_size <= self.log_offset
        if sent:  # the service has it all: the local copy goes
            for ext in ("log", "exit", "go"):
                try:
                    os.unlink(self._job_file(ext))
                except FileNotFoundError:
                    pass
