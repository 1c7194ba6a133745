"""HubgridSpawnerMixin: hubgrid admission and placement for any JupyterHub spawner.

Before the wrapped spawner starts anything, the hubgrid service admits and
places the session (``POST internal/allocations``). While the request is
pending, progress events show why; a refusal is a SpawnException with the
service's reason (spawner/admission.py: how a pending spawn waits, rides
through a restart of the service, and the reasons a start fails with). The
allocation id lives in the spawner state; it is released exactly once when
the server stops or is found dead.

Time in the queue does not count against ``start_timeout``: the hub is given
``start_timeout + max_queue_wait`` (and a margin for the service's calls), and
the mixin applies the configured ``start_timeout`` itself to the backend's
start after admission.

    class MySpawner(HubgridSpawnerMixin, SomeSpawner): ...
"""

from __future__ import annotations

import asyncio
import math
from decimal import Decimal

from traitlets import (Bool, Dict, Enum, Float, Instance, Integer, TraitError, Unicode, default,
                       validate)
from traitlets.config import Configurable

from hub_ext.client import HubgridClient, Refused, ServiceUnavailable
from hub_ext.config import SERVICE_NAME
from quota_service.core import sharecheck

from . import admission
from .admission import fail, unavailable, user_refused
from .batchgo import BatchGoMixin
from .builders import MODES, gpu_environment
from .gatewayenv import gateway_environment
from .gpuenv import (MPS_LOG_DIRECTORY, MPS_PIPE_DIRECTORY, NodeEnforcement, allocation_gpus,
                     hami_library)
from .isolation import gateway_url, session_api_url
from .options import (TEMPLATES, OptionsError, SessionOptions, options_from_form, parse_options,
                      preset_size, spawn_form)


def read_from(path, offset: int) -> bytes:
    """A session's output file from byte ``offset`` on (b"" while there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""


def options_read_at_start(spawner, user_options: dict) -> None:
    """JupyterHub's ``apply_user_options`` hook for hubgrid spawners: the
    options (project, resource_group, cpu, mem, gpu, gpu_shares, image,
    vfolders, ...) are validated against the spawn options' schema and
    applied by ``start()`` (``_admit``: a bad one fails the start with a 400),
    so there is nothing to do before it. Declaring the hook tells the hub
    the options are handled (no "Received unhandled user_options" warning)."""


class HubgridSpawnerMixin(BatchGoMixin, Configurable):
    """hubgrid admission, placement and release for any JupyterHub spawner."""

    #: the backend mounts the session's vfolders (the ``vfolders`` option)
    mounts_vfolders = False
    #: the backend runs an endpoint's replicas (``session_type`` inference)
    runs_inference = False

    allocation_id = Unicode(None, allow_none=True)
    #: the service's allocation model of the running session (not persisted)
    allocation = Dict()
    #: bytes of the session's output already sent to the service
    log_offset = Integer(0)
    #: the environment of this start: allocation, GPUs, batch command
    session_env = Dict()
    #: how the session's main process ended (batch sessions), once known
    exit_code = Integer(None, allow_none=True)
    #: why the start waits, for the progress page
    pending_progress = Instance(admission.Progress, args=())
    #: the progress page's last words when this start was cancelled ("": it was not)
    cancelled_message = Unicode("")

    gpu_sharing_mode = Enum(
        list(MODES),
        "framework",
        help="""How a fractional GPU allocation is enforced in the session:
        ``mps`` (NVIDIA MPS per-client limits; needs the MPS daemon on the
        node), ``hami`` (HAMi-core style limits; only for images that preload
        that library) or ``framework`` (memory caps the ML frameworks honour;
        cooperative). docs/gpus.md says what each holds and does not hold.""",
    ).tag(config=True)

    mps_pipe_directory = Unicode(
        MPS_PIPE_DIRECTORY,
        help="""The node's MPS pipe directory (``CUDA_MPS_PIPE_DIRECTORY`` of
        its ``nvidia-cuda-mps-control -d``): sessions in ``mps`` mode are
        given it (a Docker session gets it mounted). Example:
        ``c.Spawner.mps_pipe_directory = "/run/nvidia-mps"``.""",
    ).tag(config=True)

    mps_log_directory = Unicode(
        MPS_LOG_DIRECTORY,
        help="""The node's MPS log directory (``CUDA_MPS_LOG_DIRECTORY``).""",
    ).tag(config=True)

    hami_library = Unicode(
        "",
        help="""Local and Slurm sessions in ``hami`` mode: the HAMi-core library
        on the node (``/usr/local/vgpu/libvgpu.so``), preloaded into the
        session. Empty: nothing is preloaded and the limits are not enforced.
        Docker sessions take it from the image's ``org.hubgrid.hami-core``
        label instead.""",
    ).tag(config=True)

    check_shares_at_start = Bool(
        True,
        help="""Before a session with a GPU share starts, check from the hub's
        machine that the node enforces it (``mps``: the MPS control daemon at
        ``mps_pipe_directory`` answers; ``hami``: ``hami_library`` exists) and
        refuse the start with the reason if not, rather than start it with no
        limits. For sessions that run on this machine (local processes, a local
        Docker engine); Slurm's default is False (its nodes are elsewhere: the
        service's share check on each node sets its ``share_check``).""",
    ).tag(config=True)

    async def _check_shares(self, allocation: dict) -> None:
        """Refuse a shared start the node cannot enforce (``check_shares_at_start``)."""
        if not self.check_shares_at_start or self.gpu_sharing_mode == "framework" \
                or all(g.share >= 1 for g in allocation_gpus(allocation["gpus"])):
            return
        reason = await asyncio.to_thread(sharecheck.check, self.gpu_sharing_mode,
                                         pipe_directory=self.mps_pipe_directory,
                                         library=self.hami_library)
        if reason:
            raise fail(f"not started: GPU shares cannot be enforced on node "
                       f"{allocation.get('node')}: {reason}", "unenforced", 503)

    def gpu_enforcement(self, image_labels: dict | None = None) -> NodeEnforcement:
        """The node's MPS directories and the HAMi-core library: the image's
        label when given (Docker), else ``hami_library``."""
        lib = hami_library(image_labels) if image_labels is not None else self.hami_library
        return NodeEnforcement(self.mps_pipe_directory, self.mps_log_directory, lib)

    pending_poll_interval = Float(
        1.0,
        help="""The shortest time, in seconds, between two checks of a pending
        allocation. With long-polls (``pending_wait``) a check normally lasts
        until something changes; this bounds how often a service that answers
        at once is asked. Example: ``c.Spawner.pending_poll_interval = 2``.""",
    ).tag(config=True)

    pending_wait = Float(
        30.0,
        help="""Seconds one long-poll of a pending allocation may last: the
        service answers when the request's state or pending reasons change, or
        after this long (at most 60; 0 turns long-polls off and
        polls every ``pending_poll_interval``). A pending spawn keeps one
        long-poll open (one connection each); the service cancels a pending
        request nobody has waited for in ``HubgridService.pending_abandon_after``
        seconds (its spawner died with its hub).""",
    ).tag(config=True)

    service_outage_limit = Float(
        300.0,
        help="""Seconds a pending spawn waits for an unreachable hubgrid service
        (a restart) before it fails with "hubgrid service unavailable" (503).
        Meanwhile it retries every few seconds and its progress says so. A
        start that finds the service unreachable before its request reached
        the queue fails at once (nothing waits in the queue yet).
        Example: ``c.Spawner.service_outage_limit = 600``.""",
    ).tag(config=True)

    max_queue_wait = Float(
        24 * 3600.0,
        help="""The longest a request may wait in hubgrid's queue, in seconds
        (the outer limit; the resource group's ``pending_timeout``, set in the
        service, usually ends a wait first). Queueing does not count against
        ``start_timeout``: the hub is given ``start_timeout + max_queue_wait``
        plus a margin for the service's calls, and ``start_timeout`` (the value
        configured) applies to the backend's start after admission. A request
        that waits longer is cancelled (SpawnException, reason
        ``queue-timeout``). Example: ``c.Spawner.max_queue_wait = 4 * 3600``.""",
    ).tag(config=True)

    default_size = Dict(
        {},
        help="""What a session asks for when its request names no size, if not
        the service's default resource preset: empty (the default) takes the
        preset marked default in ``c.HubgridService.resource_presets``, the
        one source of sizes the spawn form and the Lab launcher share. Set
        (``cpu``, cores such as ``"0.5"``, and ``mem``, ``"512M"``, ``"2G"`` or
        bytes), this hub's spawn form starts on it and a start through the
        REST API without ``cpu`` or ``mem`` gets it.
        Example: ``c.Spawner.default_size = {"cpu": "0.5", "mem": "1G"}``.""",
    ).tag(config=True)

    @validate("default_size")
    def _check_default_size(self, proposal):
        size = dict(proposal.value)
        if not size:
            return size
        unknown = sorted(set(size) - {"cpu", "mem"})
        if unknown:
            raise TraitError(f"default_size: only cpu and mem, not {', '.join(unknown)}")
        try:
            parse_options(size)
        except OptionsError as e:
            raise TraitError(f"default_size: {e}") from None
        return size

    hubgrid_api_url = Unicode(
        help="""The hubgrid API URL sessions call, given to them as
        ``$HUBGRID_API_URL`` (the Lab extension's server side and the
        ``hubgrid`` command use it, with the session's own token). Default:
        the hub's public URL (``c.JupyterHub.public_url``) if set, else the
        proxy's ``c.JupyterHub.bind_url`` with a wildcard host read as
        127.0.0.1, followed by ``services/hubgrid/api/v1/``: right for local
        processes and host-networked containers on the hub's machine, as
        JUPYTERHUB_API_URL is. Sessions on other machines (remote Docker
        engines, Slurm nodes) need a URL they can reach, e.g.
        ``c.Spawner.hubgrid_api_url = "https://hub.example.org/services/hubgrid/api/v1/"``.""",
    ).tag(config=True)

    @validate("pending_wait")
    def _check_pending_wait(self, proposal):
        if not 0 <= proposal.value <= 60:
            raise TraitError(f"pending_wait must be within 0 and 60 seconds, not {proposal.value}")
        return proposal.value

    @validate("max_queue_wait", "service_outage_limit")
    def _check_positive(self, proposal):
        if not proposal.value > 0:
            raise TraitError(f"{proposal.trait.name} must be positive, not {proposal.value}")
        return proposal.value

    # -- the service ----------------------------------------------------------

    @property
    def hubgrid(self) -> HubgridClient:
        auth = self.authenticator
        if not hasattr(auth, "service_api_url"):
            raise fail("hubgrid spawners need the hubgrid authenticator "
                       "(c.JupyterHub.authenticator_class = 'hubgrid')", "config", 500)
        return HubgridClient(auth.service_api_url, auth.internal_token, auth.service_timeout)

    # -- options --------------------------------------------------------------

    async def _hubgrid_form(self, spawner=None):
        try:
            choices = await self.hubgrid.spawn_choices(self.user.name)
        except (Refused, ServiceUnavailable) as e:
            return TEMPLATES.from_string("<p class=\"alert alert-danger\">{{ e }}</p>").render(
                e=f"hubgrid cannot offer you sessions now: {e}")
        image = self.session_image(SessionOptions())
        base = self.hub.base_url[:-len("hub/")] if self.hub else "/"
        return spawn_form(choices, image, defaults=self.default_size or None,
                          images=image is not None,
                          console_url=f"{base}services/{SERVICE_NAME}/console/")

    @default("options_form")
    def _default_options_form(self):
        return self._hubgrid_form

    @default("progress_ready_hook")
    def _default_progress_ready_hook(self):
        return admission.ready_unless_cancelled

    def options_from_form(self, formdata):
        return options_from_form(formdata)

    @default("apply_user_options")
    def _default_apply_user_options(self):
        return options_read_at_start

    # -- lifecycle ------------------------------------------------------------

    def _env_of(self, allocation: dict) -> dict:
        return {
            "HUBGRID_ALLOCATION": allocation["id"],
            "HUBGRID_DOMAIN": allocation["domain"],
            "HUBGRID_PROJECT": allocation["project"],
            "HUBGRID_RESOURCE_GROUP": allocation["resource_group"],
            "HUBGRID_NODE": allocation["node"] or "",
        }

    async def _size_unless_given(self, client: HubgridClient, options: dict) -> dict:
        """``Spawner.default_size``, else the service's default preset, for a
        request that names no cpu or no mem (else nothing is asked)."""
        if {"cpu", "mem"} <= set(options):
            return {}
        if self.default_size:
            return self.default_size
        try:
            return preset_size(await client.spawn_choices(self.user.name))
        except Refused as e:
            raise user_refused(e) from None
        except ServiceUnavailable as e:
            raise unavailable(e) from None
        except OptionsError as e:
            raise fail(str(e), "config", 500) from None

    async def _admit(self) -> dict:
        client = self.hubgrid
        options = dict(self.user_options or {})
        try:
            opts, slots = parse_options({**await self._size_unless_given(client, options),
                                         **options})
        except OptionsError as e:
            raise fail(f"invalid options: {e}", "invalid", 400) from None
        if opts.session_type == "inference" and not self.runs_inference:
            raise fail("invalid options: session_type: this backend does not run inference "
                       "sessions (Docker and Slurm do)", "invalid", 400)
        if opts.vfolders and not self.mounts_vfolders:
            raise fail("invalid options: vfolders: this backend does not mount vfolders "
                       "(Docker sessions do)", "invalid", 400)
        project = opts.project
        if project is None:
            try:
                identity = await client.identity(self.user.name)
            except Refused as e:
                raise user_refused(e) from None
            except ServiceUnavailable as e:
                raise unavailable(e) from None
            if not identity["projects"]:
                raise fail("you are not in any project; ask an admin of your domain",
                           "no-project", 403)
            project = identity["projects"][0]
        body = {
            "user": self.user.name, "project": project, "resource_group": opts.resource_group,
            "slots": {k: str(v) for k, v in slots.items()}, "gpu_models": opts.gpu_models,
            "session_type": opts.session_type, "server_name": self.name or "",
        }
        if opts.vfolders:
            body["vfolders"] = opts.vfolders
        image = self.session_image(opts)
        if image:
            body["image"] = image
        if opts.session_type == "batch":
            body["command"] = opts.command
        if opts.endpoint:  # a replica: the service checks it against its endpoint
            body["endpoint"] = opts.endpoint
        try:
            # not retried: a request that did not reach the queue has nothing to wait for
            allocation = await client.allocate(body)
        except Refused as e:
            raise fail(e.message, "refused", 403) from None
        except ServiceUnavailable as e:
            raise unavailable(e) from None
        self.allocation_id = allocation["id"]
        waiting = admission.Waiting(wait=self.pending_wait, interval=self.pending_poll_interval,
                                    outage_limit=self.service_outage_limit)
        try:
            allocation = await admission.follow(client, allocation, waiting, self._set_pending)
        finally:
            self._set_pending("")
        if allocation["state"] != "allocated":
            reason = allocation.get("release_reason") or allocation["state"]
            self.allocation_id = None
            raise fail(f"not started: {reason}", "cancelled", 409)
        self.log_offset, self.exit_code = 0, None
        await self._check_shares(allocation)  # refused: released as cancelled
        self._apply_allocation(allocation, opts)
        return allocation

    def _apply_allocation(self, allocation: dict, opts) -> None:
        self.allocation = allocation
        slots = {k: Decimal(v) for k, v in allocation["slots"].items()}
        if "mem" in slots:
            self.mem_limit = int(slots["mem"])
        if "cpu" in slots:
            self.cpu_limit = float(slots["cpu"])  # traitlets' Float, at the backend edge
        gpus = allocation_gpus(allocation["gpus"])
        batch = {"HUBGRID_BATCH_COMMAND": opts.command} if opts.session_type == "batch" else {}
        self.session_env = {**self._env_of(allocation), **batch,
                            **gpu_environment(gpus, self.gpu_sharing_mode, "host",
                                             self.gpu_enforcement())}

    def public_api_url(self) -> str:
        """``hubgrid_api_url``, or the hub's proxy's (``session_api_url``)."""
        proxy = (getattr(self.user, "settings", None) or {}).get("proxy")
        return self.hubgrid_api_url or session_api_url(
            self.public_hub_url, getattr(proxy, "public_url", ""),
            self.hub.base_url[:-len("hub/")] if self.hub else "/")

    def get_env(self):
        # the session's own variables, set anew for every start
        env = {**super().get_env(), **self.session_env}
        api_url = self.public_api_url()
        if api_url:
            env["HUBGRID_API_URL"] = api_url
        # the serving gateway beside it: HUBGRID_GATEWAY_URL, OPENAI_BASE_URL
        return gateway_environment(env, gateway_url(api_url) if api_url else "")

    # -- backend hooks (a concrete spawner overrides what it can) --------------

    def session_image(self, opts) -> str | None:
        """The registry image this session runs (None: the backend has no images)."""
        return None

    async def session_log(self, offset: int) -> bytes:
        """The session's output from byte ``offset`` on (b"" when there is none)."""
        return b""

    async def session_exit_code(self) -> int | None:
        """How the session's main process ended, once it has (else None)."""
        return None

    async def recover_start(self, status) -> bool:
        """A server whose start the hub never saw finish (``poll``'s
        ``status``): True to keep it (its server is up, its allocation
        recovered and checked), else it is stopped; whatever of it was
        recovered (``allocation_id``) is released then."""
        return False

    async def discard_session(self) -> None:
        """Remove what is left of a session that ended by itself (a stopped
        container); JupyterHub calls stop() only for running servers."""

    async def push_log(self) -> None:
        """Send the session's new output to the service (best effort)."""
        if not self.allocation_id:
            return
        try:
            data = await self.session_log(self.log_offset)
        except Exception as e:  # a backend that cannot read logs must not break the session
            self.log.warning("could not read the log of %s: %s", self._log_name, e)
            return
        if not data:
            return
        try:
            await self.hubgrid.append_log(self.allocation_id, data)
        except (Refused, ServiceUnavailable) as e:
            self.log.warning("could not store the log of %s: %s", self._log_name, e)
            return
        self.log_offset += len(data)

    async def session_ended(self) -> None:
        """Keep the output and exit code of a session that ended (before the
        backend removes its container or job)."""
        await self.push_log()
        if self.exit_code is None:
            try:
                self.exit_code = await self.session_exit_code()
            except Exception as e:
                self.log.warning("could not read the exit code of %s: %s", self._log_name, e)

    # -- the start budget -----------------------------------------------------

    #: the configured start_timeout (the backend's budget) and what the hub got
    _start_budget: int | None = None
    _hub_start_timeout: int | None = None

    def run_pre_spawn_hook(self):
        # the hub reads start_timeout right after this, for the whole of
        # start(): give it the queue's time too (start() applies the budget)
        if self._start_budget is None or self.start_timeout != self._hub_start_timeout:
            self._start_budget = self.start_timeout  # configured (or changed since)
        margin = 3 * getattr(self.authenticator, "service_timeout", 20)
        self._hub_start_timeout = math.ceil(self._start_budget + self.max_queue_wait + margin)
        self.start_timeout = self._hub_start_timeout
        return super().run_pre_spawn_hook()

    async def start(self):
        budget = self.start_timeout if self._start_budget is None else self._start_budget
        try:
            return await self._start(budget)
        finally:
            # the backend, later starts and the hub's messages see the budget
            self.start_timeout = budget

    async def _start(self, budget: int):
        self.cancelled_message = ""
        if self.allocation_id:  # left by a start whose release failed
            await self._release("a new start replaces it")
        try:
            try:
                async with asyncio.timeout(self.max_queue_wait) as queue:
                    await self._admit()
            except TimeoutError:
                if not queue.expired():
                    raise
                raise fail(f"not started: waited longer than {self.max_queue_wait:g} s in the "
                           "queue (max_queue_wait)", "queue-timeout", 409) from None
        except BaseException as e:  # refused, timed out, or cancelled while pending
            if isinstance(e, asyncio.CancelledError):
                self.cancelled_message = admission.CANCELLED_QUEUED
            await self._release("cancelled before it started")
            raise
        self.start_timeout = budget
        try:
            # the hub's timer covers the queue too: the budget applies from here
            return await asyncio.wait_for(super().start(), budget)
        except BaseException as e:
            if isinstance(e, asyncio.CancelledError):
                self.cancelled_message = admission.CANCELLED_STARTING
            await self.session_ended()
            # the cause goes with it: an endpoint's replica shows it (serving)
            why = (getattr(e, "message", None) or str(e) or type(e).__name__) \
                if isinstance(e, Exception) else ""
            await self._release("the server failed to start" + (f": {why}" if why else ""))
            raise

    #: RELEASE_STOPPED: the hub stops the server because its owner, an admin
    #: or the culler asked (JupyterHub calls stop()); RELEASE_DIED: poll()
    #: found it gone when nobody was stopping it
    RELEASE_STOPPED = "stopped"
    RELEASE_DIED = "the server is no longer running"
    #: inside stop(): the wrapped spawner's own polls (LocalProcessSpawner's
    #: wait_for_death) see the process end because it is being stopped
    _stopping = False

    async def stop(self, now=False):
        self._stopping = True
        try:
            await super().stop(now=now)
        finally:
            self._stopping = False
            if self.allocation_id:
                await self.session_ended()
            await self._release(self.RELEASE_STOPPED)

    async def poll(self):
        status = await super().poll()  # (finds a container by its name: stop() removes it)
        if self.server is not None and not self.allocation_id and not self._spawn_pending \
                and not self._stopping:
            # a start the hub never saw finish (it was killed meanwhile): kept
            # only when the backend recovers it with its server up; else the
            # hub calls no stop() for what poll() says ended, so it goes here
            if await self.recover_start(status):
                return None
            if status is None:
                await super().stop(now=True)
            else:
                await self.discard_session()
            await self._release("its start did not finish before the hub restarted")
            return status or "its start did not finish before the hub restarted"
        if self.allocation_id and not self._stopping:  # stop() releases its own
            if status is None:
                await self.push_log()
            else:
                await self.session_ended()
                await self._release(self.RELEASE_DIED)
                # JupyterHub does not call stop() for a server that died
                await self.discard_session()
        return status

    async def _release(self, reason: str) -> None:
        alloc, self.allocation_id = self.allocation_id, None
        if alloc:
            self.log.info("releasing hubgrid allocation %s of %s: %s", alloc, self._log_name, reason)
            try:
                await self.hubgrid.release(alloc, reason, exit_code=self.exit_code)
            except (Refused, ServiceUnavailable) as e:
                self.log.warning("could not release allocation %s: %s", alloc, e)
                self.allocation_id = alloc  # try again at the next stop/poll

    # -- progress -------------------------------------------------------------

    def _set_pending(self, message: str) -> None:
        """Show ``message`` (why the start waits) on the progress page."""
        was = self.pending_progress.message
        if self.pending_progress.show(message) and message.startswith(admission.UNAVAILABLE) \
                and not was.startswith(admission.UNAVAILABLE):
            self.log.warning("%s: %s", self._log_name, message)

    async def progress(self):
        # a (re)loaded page starts on the current place, not the last one reported
        if self.pending_progress.message and self.allocation_id:
            self._set_pending(await admission.fresh_pending_text(self.hubgrid, self.allocation_id)
                              or self.pending_progress.message)
        async for message in self.pending_progress.messages():
            yield {"message": message}

    # -- state ----------------------------------------------------------------

    def get_state(self):
        state = super().get_state()
        if self.allocation_id:
            state["hubgrid_allocation"] = self.allocation_id
            state["hubgrid_log_offset"] = self.log_offset
        return state

    def load_state(self, state):
        super().load_state(state)
        self.allocation_id = state.get("hubgrid_allocation")
        self.log_offset = int(state.get("hubgrid_log_offset", 0))

    def clear_state(self):
        # the wrapped spawner clears its state inside its own poll() and
        # stop(); the allocation is dropped only by _release, exactly once
        super().clear_state()
