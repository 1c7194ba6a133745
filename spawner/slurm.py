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

By default every job runs as the hub's own user: sessions are NOT isolated
from each other (each can read the others' files and output). With
``unix_users`` (or an ``exec_prefix`` naming ``{username}``) each job is
submitted, queried and cancelled as its user's Unix account, works in that
user's home, and writes its output to a directory of the user's own, which
the hub reads as the user (spawner/jobfiles.py). A hub user with no Unix
account is refused before anything is asked of hubgrid or Slurm.
"""

from __future__ import annotations

import asyncio
import os
import pwd
from decimal import Decimal
from pathlib import Path

from batchspawner import JobStatus, SlurmSpawner
from batchspawner.batchspawner import format_template
from jupyterhub.spawner import SpawnException
from jupyterhub.utils import random_port
from traitlets import Bool, Dict, Enum, Integer, Unicode, default

from .builders import SLURM_GPU_GRES, reapplied_gpu_environment, slurm_request
from .gpuenv import allocation_gpus
from .jobfiles import HubJobFiles, UserJobFiles, quiet_env, run_by_others
from .mixin import HubgridSpawnerMixin
from .slurmreplica import InferenceSlurmMixin

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
# the session's search path where sudo replaced it (secure_path; unix_users)
[ -z "${HUBGRID_PATH:-}" ] || export PATH="$HUBGRID_PATH"
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

    unix_users = Bool(
        False,
        help="""Run each job as the Unix account named like its hub user:
        submitted, queried and cancelled through ``exec_prefix`` (default then
        ``sudo -E -u {username}``), in the user's home (from the password
        database), its output in ``<home>/<unix_job_dir>`` (0700, the log
        0600), read by the hub as the user. A hub user with no account is
        refused (403). Off (the default): every job runs as the hub's user,
        NOT isolated from the others. An ``exec_prefix`` naming
        ``{username}`` turns it on as well. See docs/sessions.md.""",
    ).tag(config=True)

    unix_job_dir = Unicode(
        ".hubgrid/slurm",
        help="""With ``unix_users``: the directory of a user's job output,
        exit-code and start files, relative to their home (on a filesystem
        the hub's machine and the nodes share).""",
    ).tag(config=True)

    @default("exec_prefix")
    def _default_exec_prefix(self):
        # hub users need not be Unix users; a site whose users are sets
        # unix_users (batchspawner's documented prefix)
        return "sudo -E -u {username}" if self.unix_users else ""

    @property
    def runs_as_user(self) -> bool:
        """Jobs run as their user's Unix account (unix_users, or a prefix
        naming the user)."""
        prefix = self.exec_prefix.replace(" ", "")
        return self.unix_users or "{username}" in prefix or "{{username}}" in prefix

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
            if self.runs_as_user:
                raise self.no_account() from None
            home = Path(self.job_home_root).resolve() / self.user.name
            home.mkdir(parents=True, exist_ok=True, mode=0o700)
            return str(home)

    def no_account(self) -> SpawnException:
        return SpawnException(
            f"no Unix account named {self.user.name!r} on the hub's machine: sessions here run "
            "as their user's account; ask an admin to create it", reason="user-refused",
            status_code=403)

    def check_runs_as_user(self) -> None:
        """Before anything is asked (unix_users): the user has an account and
        can run the session's script and server."""
        if not self.runs_as_user:
            return
        try:
            home = pwd.getpwnam(self.user.name).pw_dir
        except KeyError:
            raise self.no_account() from None
        try:
            if os.stat(home).st_mode & 0o077:
                self.log.warning("the home %s of %s is open to other users (mode 0700 keeps "
                                 "it theirs; docs/sessions.md)", home, self.user.name)
        except OSError:
            pass  # not on the hub's machine: the nodes' business
        for path in (SESSION_SCRIPT, *self.cmd[:1]):
            part = run_by_others(path)
            if part:
                raise SpawnException(
                    f"{path} cannot run as another user than the hub's ({part} is not open to "
                    "them): install hubgrid where every user can read it (docs/sessions.md)",
                    reason="config", status_code=500)

    def user_env(self, env):
        env["USER"] = self.user.name
        env["HOME"] = self.req_homedir
        if self.runs_as_user and "PATH" in env:
            env["HUBGRID_PATH"] = env["PATH"]  # sudo sets its secure_path
        return env

    async def run_command(self, cmd, input=None, env=None):
        # batchspawner's query and cancel as the user: not with the hub's
        # environment (the user can read their own processes' environment)
        if env is None and self.runs_as_user:
            env = quiet_env()
        return await super().run_command(cmd, input=input, env=env)

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

    async def prepare_job(self) -> None:
        """Before the job is submitted (its output's directory)."""

    async def start(self):
        self.port = random_port()
        self.ip = self.job_ip
        if self.server:
            self.server.port = self.port
        try:
            await self.prepare_job()
        except (OSError, RuntimeError) as e:
            raise SpawnException(f"cannot make the job's output directory: {e}",
                                 reason="backend", status_code=500) from None
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
                raise await self.ended_before_start()
            await asyncio.sleep(self.startup_poll_interval)
        await self.job_running()
        host = self.state_gethost() if self.job_ip == "0.0.0.0" else self.job_ip
        return host, self.port

    async def ended_before_start(self) -> SpawnException:
        """Why a start failed whose job ended before it was seen running (a
        replica says it with its log's last line: spawner/slurmreplica.py)."""
        return SpawnException(f"Slurm job {self.job_id} ended before its server started",
                              reason="backend")

    async def job_running(self) -> None:
        """Once the job runs, before start() returns (a replica waits for its
        server here: spawner/slurmreplica.py)."""


class HubgridSlurmSpawner(InferenceSlurmMixin, HubgridSpawnerMixin, SlurmJobSpawner):
    """Sessions as Slurm jobs, admitted and accounted by hubgrid; an endpoint's
    replicas too (spawner/slurmreplica.py)."""

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

    async def start(self):
        try:
            self.check_runs_as_user()  # before admission: a refusal holds nothing
        except SpawnException:
            if self._start_budget is not None:  # what run_pre_spawn_hook raised
                self.start_timeout = self._start_budget
            raise
        return await super().start()

    def job_files(self) -> HubJobFiles:
        """This session's files (spawner/jobfiles.py): the user's own
        (unix_users) or the hub's."""
        if not self.runs_as_user:
            return HubJobFiles(self.job_log_dir, self.allocation_id)
        prefix = format_template(self.exec_prefix, **self.get_req_subvars())
        return UserJobFiles(prefix, Path(self.req_homedir) / self.unix_job_dir,
                            self.allocation_id)

    def job_output_file(self) -> str:
        return self.job_files().path("log")

    async def prepare_job(self) -> None:
        await self.job_files().prepare()

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
            files = self.job_files()
            env["HUBGRID_EXIT_FILE"] = files.path("exit")
            env["HUBGRID_BATCH_GO_FILE"] = files.path("go")
        self.session_env = env
        self.req_keepvars = ",".join(self.get_env())

    async def batch_go(self) -> None:
        await self.job_files().touch("go")

    async def session_log(self, offset: int) -> bytes:
        return await self.job_files().read("log", offset)

    async def session_exit_code(self) -> int | None:
        try:
            return int((await self.job_files().read("exit")).decode().strip())
        except ValueError:
            return None

    async def session_ended(self) -> None:
        await super().session_ended()
        try:
            files = self.job_files()
            size = await files.size("log")
            if size is None or size <= self.log_offset:  # the service has it all
                await files.remove()  # the local copy goes
        except (OSError, RuntimeError, SpawnException) as e:  # e.g. the account is gone
            self.log.warning("could not remove the job files of %s: %s", self._log_name, e)
