"""Settings of the service, grouped by what they steer, as traitlets mixins
of ``HubgridService`` (``c.HubgridService.<name>`` sets each): where session
logs and folders live (``StorageSettings``), and how reclaim, usage,
metrics and the GPU share check run (``OperationsSettings``). The app
module keeps the settings of the service itself (database, hub, scheduling)."""

from __future__ import annotations

import os

from jupyterhub.traitlets import ByteSpecification
from traitlets import Bool, Dict, Enum, Float, HasTraits, Integer, TraitError, Unicode, default, validate

from ..sessions import logs as sessionlogs
from ..storage import hosts as storage
from . import bootstrap


class StorageSettings(HasTraits):
    """Session logs and virtual folders."""

    # -- session logs ------------------------------------------------------

    session_log_dir = Unicode(
        help="""Directory of the per-session logs (one file per allocation,
        readable by the service's user only). Default: ``session-logs`` next to
        the SQLite database, else in the service's working directory (the hub
        runs it in its state directory).""",
    ).tag(config=True)

    @default("session_log_dir")
    def _default_session_log_dir(self):
        return bootstrap.state_path(self.db_url, "session-logs")

    session_log_max_bytes = ByteSpecification(
        2**20,
        help="""The most a session's log keeps (e.g. ``"1M"``, at least 4K): past
        it the oldest output is dropped and a line at the top says so.""",
    ).tag(config=True)

    @validate("session_log_max_bytes")
    def _valid_session_log_max_bytes(self, proposal):
        if proposal["value"] < sessionlogs.MIN_BYTES:
            raise TraitError(f"session_log_max_bytes: at least {sessionlogs.MIN_BYTES} bytes")
        return proposal["value"]

    session_log_retention_days = Integer(
        30,
        help="""Days a session's log is kept after the session is released; then
        it is deleted and reading it answers 410. 0: keep logs forever.""",
    ).tag(config=True)

    @validate("session_log_retention_days")
    def _valid_retention(self, proposal):
        if proposal["value"] < 0:
            raise TraitError("session_log_retention_days: 0 (forever) or more")
        return proposal["value"]

    session_log_purge_interval = Float(
        3600.0,
        help="""Seconds between passes of the log retention rule (one also runs
        at start).""",
    ).tag(config=True)

    # -- virtual folders -----------------------------------------

    vfolder_hosts = Dict(
        help="""Storage hosts of virtual folders: name -> ``{"path": DIR}``, e.g.::

            c.HubgridService.vfolder_hosts = {
                "local": {"path": "/srv/hubgrid/vfolders"},
                "nfs": {"path": "/mnt/nfs/hubgrid"},   # mounted at this path on every node
            }

        A folder's files live in ``<path>/<folder id>``; ``<path>/.staging``
        holds partial uploads. Each host's capabilities are detected at start:
        ``usage`` always (measured by scanning), ``quota`` when the path is on
        XFS mounted with ``prjquota`` and ``xfs_quota`` is installed (then the
        owners' ``max_vfolder_size`` is also a kernel-enforced hard limit);
        ``"quota": False`` turns XFS quotas off for a host, ``"xfs_project_base"``
        moves hubgrid's XFS project ids (default 1000000). Which hosts a
        domain, project or user may use is policy (``allowed_vfolder_hosts``;
        see docs/vfolders.md). Default: one host ``local`` at ``vfolders`` next
        to the SQLite database, else in the service's working directory.""",
    ).tag(config=True)

    @default("vfolder_hosts")
    def _default_vfolder_hosts(self):
        return {"local": {"path": bootstrap.state_path(self.db_url, "vfolders")}}

    @validate("vfolder_hosts")
    def _valid_vfolder_hosts(self, proposal):
        try:
            return storage.check_host_config(proposal["value"])
        except storage.HostConfigError as e:
            raise TraitError(str(e)) from None

    default_vfolder_host = Unicode(
        "local",
        help="""The storage host of a new folder when its creator names none
        (it must be one of ``vfolder_hosts`` the creator may use).""",
    ).tag(config=True)

    vfolder_uid = Integer(
        1000,
        help="""Owner (uid) of new folder directories, the uid sessions run as
        (jovyan is 1000). Applied only when the service runs as root.""",
    ).tag(config=True)

    vfolder_gid = Integer(
        100,
        help="""Group (gid) of new folder directories (mode 2770), the gid
        sessions run as (users is 100). Applied only when the service runs as root.""",
    ).tag(config=True)

    vfolder_usage_interval = Float(
        600.0,
        help="""Seconds between scans measuring every folder's usage (one also
        runs at start). Between scans the files API keeps the cached usage
        right; writes made inside sessions show at the next scan.""",
    ).tag(config=True)

    vfolder_staging_max_age_hours = Float(
        24.0,
        help="""Hours after which a leftover in a host's ``.staging`` directory
        (the file of a plain upload a crash interrupted, half-written tus
        state) is deleted. The sweep runs at the first upload to a host
        after the service starts, then at most hourly with uploads; uploads
        in progress are never swept.""",
    ).tag(config=True)

    vfolder_tus_expiry_hours = Float(
        168.0,
        help="""Hours a resumable (tus) upload may stay idle before the sweep
        deletes its bytes and gives back the quota it holds, e.g.
        ``c.HubgridService.vfolder_tus_expiry_hours = 48``.""",
    ).tag(config=True)


class OperationsSettings(HasTraits):
    """Idle reclamation, metrics and reconcile."""

    reconcile_unknown = Bool(
        True,
        help="""Whether reconcile (``GET``/``POST reconcile``) takes containers and
        Slurm jobs naming an allocation this ledger never had for orphans (no
        hub server holding them). Set False where several hubgrid services share
        Docker engines or a Slurm cluster: they are then listed as spared.""",
    ).tag(config=True)

    # -- idle reclamation (docs/operations.md) ---------------------

    reclaim_interval = Float(60.0, help="""Seconds between idle reclamation passes
        (0: off); a session is reclaimed within one interval of its deadline.""",
                             ).tag(config=True)
    reclaim_shadow_mode = Bool(False, help="""Only report what would be reclaimed
        (``shadow`` events with the GPU-hours it would free); warn and stop nothing.""",
                               ).tag(config=True)
    reclaim_warning = Integer(300, help="""Seconds of warning before a reclaim, for
        policies without their own ``reclaim_warning`` (0: none).""").tag(config=True)
    reclaim_save_wait = Integer(120, help="""Seconds past its deadline that a
        session's stop may wait for the Lab open on it to save its documents:
        while a Lab that listens for the reclaim has not taken the notice yet
        (its activity report comes later than the warning, or it is retrying a
        failed call; with a warning of 0 it hears of the reclaim only at the
        deadline), and while it saves. The stop goes ahead at the first pass
        after the Lab says the save ended, or after this many seconds. Keep it
        above ``HubgridLab.activity_interval`` plus the time a save takes.
        0: never wait (what is unsaved in an open Lab is lost). Example:
        ``c.HubgridService.reclaim_save_wait = 180``.""").tag(config=True)

    @validate("reclaim_save_wait")
    def _valid_reclaim_save_wait(self, proposal):
        if not 0 <= proposal["value"] <= 3600:
            raise TraitError("reclaim_save_wait: from 0 to 3600 seconds")
        return proposal["value"]
    reclaim_gpu_source = Enum(["none", "nvml"], "none", help="""GPU readings of the
        utilization rule: NVML on the service's node, or none (GPU thresholds: no
        data, never idle).""").tag(config=True)
    usage_sample_window = Integer(600, help="""Seconds of live-use readings kept
        for every running session but an endpoint's replica, whatever its
        policy: each reclaim pass (``reclaim_interval``) reads the session's
        CPU, memory and GPU use, which its detail shows ("Use now", ``GET
        allocations/<id>/usage``). Reading reclaims nothing: only a policy's
        utilization rule judges the readings, over its own window. 0: only
        sessions under a policy with a utilization rule are read. Example:
        ``c.HubgridService.usage_sample_window = 1800``.""").tag(config=True)

    @validate("usage_sample_window")
    def _valid_usage_sample_window(self, proposal):
        if not 0 <= proposal["value"] <= 86400:
            raise TraitError("usage_sample_window: from 0 to 86400 seconds")
        return proposal["value"]

    # -- GPU share check (docs/gpus.md) -----------------------------

    share_check_interval = Float(60.0, help="""Seconds between checks that this
        machine's node can enforce GPU shares in its ``sharing_mode`` (``mps``:
        the MPS control daemon answers; ``hami``: the HAMi-core library exists);
        the node's ``share_check`` is set to why not, and cleared when it can
        again (0: off, ``share_check`` is left to admins and node agents).""",
                                 ).tag(config=True)
    share_check_node = Unicode(help="""The node the share check is about: this
        machine's, by default its host name as the local node is registered.""",
                               ).tag(config=True)
    mps_pipe_directory = Unicode("/tmp/nvidia-mps", help="""The MPS control
        daemon's pipe directory on this machine (its ``control`` socket), as the
        spawners' ``mps_pipe_directory``.""").tag(config=True)
    hami_library = Unicode("", help="""The HAMi-core library on this machine, as
        the spawners' ``hami_library`` ("": not checked; Docker images name
        their own).""").tag(config=True)

    @default("share_check_node")
    def _default_share_check_node(self):
        return bootstrap.local_node_name()

    # -- metrics -------------------------------------------------

    authenticate_prometheus = Bool(
        True,
        help="""Scrapers of ``<prefix>api/v1/metrics`` must authenticate, as for
        JupyterHub's own setting of this name: a hub token with the scope
        ``read:metrics`` (and ``access:services!service=hubgrid``), or a
        superadmin's token or keypair. ``False``: anyone who can reach the
        service may read the metrics (see docs/operations.md).""",
    ).tag(config=True)

    metrics_user_labels = Bool(
        False,
        help="""Also export per-user series (``hubgrid_user_*``: slots and
        sessions of each user). Off by default: one series per user is an
        unbounded label set that grows with every user.""",
    ).tag(config=True)


class ServingSettings(HasTraits):
    """Model serving."""

    endpoint_token_max_days = Integer(
        90,
        help="""The longest a bearer token of an endpoint may live, in days:
        every token is made with an expiry (``expires_in_days``), and one past
        this is refused. E.g. ``c.HubgridService.endpoint_token_max_days = 30``.
        Lowering it does not shorten tokens already made: revoke those.""",
    ).tag(config=True)

    @validate("endpoint_token_max_days")
    def _valid_token_max_days(self, proposal):
        if not 1 <= proposal["value"] <= 3650:
            raise TraitError("endpoint_token_max_days: from 1 to 3650")
        return proposal["value"]

    gateway_url = Unicode(
        help="""Where the service reaches the serving gateway (its root, e.g.
        ``http://127.0.0.1:10102/services/hubgrid-gateway/``), for the
        console's Chat page: the service repeats the page's gateway calls there
        with the caller's own hub login token (``console/hubgrid/gateway/``).
        Default: ``$HUBGRID_GATEWAY_URL`` (``hub_ext.config.configure`` sets it
        when it runs the gateway); empty: the console's Chat says the gateway
        is not configured.""",
    ).tag(config=True)

    @default("gateway_url")
    def _default_gateway_url(self):
        return os.environ.get("HUBGRID_GATEWAY_URL", "")

    @validate("gateway_url")
    def _valid_gateway_url(self, proposal):
        value = proposal["value"].strip()
        if value and not value.startswith(("http://", "https://")):
            raise TraitError("gateway_url: an http:// or https:// URL, or empty")
        return value

    serving_interval = Float(
        5.0,
        help="""Seconds between two passes of the serving controller, which
        starts, replaces and stops endpoints' replicas through the hub and sets
        each endpoint's state (an endpoint's create, PATCH and DELETE run a
        pass at once; a killed replica is replaced within one interval of the
        hub or the service seeing it gone). 0: no pass (replicas are left as
        they are). E.g. ``c.HubgridService.serving_interval = 10``.""",
    ).tag(config=True)

    @validate("serving_interval")
    def _valid_serving_interval(self, proposal):
        if not 0 <= proposal["value"] <= 3600:
            raise TraitError("serving_interval: from 0 to 3600 seconds")
        return proposal["value"]
