"""First-start set-up, run at every start (idempotent): the default domain,
project, resource policy and resource group, the nodes to register, a
superadmin who can act; and the directories the service keeps its state in
(session logs, storage hosts).

Plain functions over a session factory and the settings they need, so the
service's ``initialize`` only wires them."""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from ..core import db
from ..core.models import Domain, Node, Project, ResourceGroup, ResourceGroupGrant, ResourcePolicy
from ..core.schemas import NodeCreate, parse
from ..scheduling import inventory
from ..scheduling.discovery import local_gpus
from ..sessions import logs as sessionlogs
from ..storage import hosts as storage
from ..tenancy import superadmins


def bootstrap(factory: sessionmaker[Session], log: logging.Logger, *, default_domain: str,
              default_project: str, bootstrap_superadmin: str, register_local_node: bool,
              nodes: list[dict]) -> None:
    """Default domain and project, and a first superadmin (idempotent), in
    one transaction. The default resource group is made once, with a grant to
    the default domain and this machine as its node (``register_local_node``);
    ``nodes`` missing by name are added at every start."""
    with db.transaction(factory) as s:
        domain = default_domain_of(s, default_domain, default_project)
        if s.scalar(select(ResourcePolicy).where(ResourcePolicy.name == "default")) is None:
            s.add(ResourcePolicy(name="default"))
        rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == "default"))
        if rg is None:
            rg = ResourceGroup(name="default", description="Created at first start")
            s.add(rg)
            s.flush()
            if domain is not None:
                rg.grants.append(ResourceGroupGrant(domain_id=domain.id))
            if register_local_node:
                add_node(s, local_node_spec(), log)
        for spec in nodes:
            if s.scalar(select(Node).where(Node.name == spec["name"])) is None:
                add_node(s, spec, log)
        if domain is not None:
            done = superadmins.restore(s, bootstrap_superadmin, domain, default_project)
            if done:
                log.info("bootstrap_superadmin: %s", done)


def default_domain_of(s: Session, name: str, project: str) -> Domain | None:
    """The domain named ``name`` (None if empty), created with its first
    ``project`` if missing."""
    if not name:
        return None
    domain = s.scalar(select(Domain).where(Domain.name == name))
    if domain is None:
        domain = Domain(name=name, description="Created at first start", allow_first_login=True)
        s.add(domain)
        s.flush()
        if project:
            s.add(Project(domain=domain, name=project, description="Created at first start"))
    return domain


def local_node_name() -> str:
    """The name this machine's node is registered with."""
    return socket.gethostname().lower() or "localhost"


def local_node_spec() -> dict:
    """This machine as a node of the default resource group: its CPUs, its
    memory and its GPUs found with NVML (none when NVML is unavailable)."""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "name": local_node_name(),
        "resource_group": "default",
        "capacity": {"cpu": str(os.cpu_count() or 1), "mem": str(mem)},
        "devices": local_gpus(),
        "backend_url": "",
    }


def add_node(s: Session, spec: dict, log: logging.Logger) -> None:
    """Register the node ``spec`` (a ``NodeCreate`` body) in its resource group."""
    body = parse(NodeCreate, spec)
    rg = s.scalar(select(ResourceGroup).where(ResourceGroup.name == body.resource_group))
    if rg is None:
        raise ValueError(f"node {body.name}: no resource group {body.resource_group!r}")
    s.add(inventory.new_node(rg, body))
    log.info("registered node %s in resource group %s", body.name, rg.name)


def state_path(db_url: str, name: str) -> str:
    """``name`` next to the SQLite database, else in the working directory
    (the hub runs the service in its state directory)."""
    try:
        url = make_url(db_url)
    except Exception:
        url = None
    if url is not None and url.get_backend_name() == "sqlite" and url.database \
            and url.database != ":memory:":
        return str(Path(url.database).resolve().parent / name)
    return str(Path(name).resolve())


def open_log_store(directory: str, max_bytes: int) -> sessionlogs.LogStore:
    """The session logs' store, its directory made readable by the service only."""
    root = Path(directory)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return sessionlogs.LogStore(root, max_bytes)


def resolve_storage(config: dict, default_host: str,
                    log: logging.Logger) -> dict[str, storage.Host]:
    """Resolve the storage hosts: make their directories, detect capabilities."""
    hosts = storage.resolve_hosts(config)
    for host in hosts.values():
        log.info("vfolder host %s at %s (%s)", host.name, host.path, ", ".join(host.capabilities))
    if default_host not in hosts:
        log.warning("default_vfolder_host %r is not one of vfolder_hosts (%s): "
                    "new folders must name their host", default_host, ", ".join(sorted(hosts)))
    return hosts
