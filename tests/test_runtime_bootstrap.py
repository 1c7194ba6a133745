"""First-start set-up (quota_service/runtime/bootstrap.py), without the service:
it runs at every start, so a second run changes nothing; what the
configuration adds later (a node) is added; a bad node is refused by name."""

from __future__ import annotations

import logging
import stat

import pytest
import sqlalchemy as sa

from quota_service.core.models import (
    Domain, Node, Project, ResourceGroup, ResourceGroupGrant, ResourcePolicy, Role, User,
)
from quota_service.runtime import bootstrap

LOG = logging.getLogger("test-bootstrap")
GPU_NODE = {"name": "gpu-01", "resource_group": "default",
            "capacity": {"cpu": "64", "mem": "512G"},
            "devices": [{"index": 0, "model": "A100", "memory": 80 * 2**30}]}


def start(factory, **settings):
    """One start of the service with these settings (the defaults of HubgridService)."""
    values = dict(default_domain="default", default_project="default",
                  bootstrap_superadmin="boss", register_local_node=True, nodes=[])
    bootstrap.bootstrap(factory, LOG, **{**values, **settings})


def counts(factory) -> dict[str, int]:
    with factory() as s:
        return {m.__name__: s.scalar(sa.select(sa.func.count()).select_from(m))
                for m in (Domain, Project, ResourcePolicy, ResourceGroup, ResourceGroupGrant,
                          Node, User)}


def test_a_second_start_changes_nothing(session_factory, caplog):
    with caplog.at_level(logging.INFO, LOG.name):
        start(session_factory, nodes=[GPU_NODE])
    first = counts(session_factory)
    assert first == {"Domain": 1, "Project": 1, "ResourcePolicy": 1, "ResourceGroup": 1,
                     "ResourceGroupGrant": 1, "Node": 2, "User": 1}
    assert "registered node gpu-01 in resource group default" in caplog.messages
    assert any(m.startswith("bootstrap_superadmin: ") for m in caplog.messages)
    caplog.clear()
    with caplog.at_level(logging.INFO, LOG.name):
        start(session_factory, nodes=[GPU_NODE])
    assert counts(session_factory) == first
    assert caplog.messages == []
    with session_factory() as s:
        boss = s.scalar(sa.select(User).where(User.name == "boss"))
        assert (boss.role, boss.domain.name) == (Role.superadmin, "default")


def test_a_node_configured_later_is_added_at_the_next_start(session_factory):
    start(session_factory, register_local_node=False)
    assert counts(session_factory)["Node"] == 0
    start(session_factory, register_local_node=False, nodes=[GPU_NODE])
    with session_factory() as s:
        node = s.scalar(sa.select(Node).where(Node.name == "gpu-01"))
        assert node.resource_group.name == "default" and len(node.devices) == 1


def test_a_node_of_an_unknown_resource_group_is_refused_by_name(session_factory):
    bad = {**GPU_NODE, "resource_group": "nowhere"}
    with pytest.raises(ValueError, match="node gpu-01: no resource group 'nowhere'"):
        start(session_factory, register_local_node=False, nodes=[bad])
    assert counts(session_factory)["ResourceGroup"] == 0  # the transaction rolled back


def test_without_a_default_domain_the_group_is_granted_to_nobody_and_no_superadmin_is_made(
        session_factory):
    start(session_factory, default_domain="", register_local_node=False)
    assert counts(session_factory) == {"Domain": 0, "Project": 0, "ResourcePolicy": 1,
                                       "ResourceGroup": 1, "ResourceGroupGrant": 0, "Node": 0,
                                       "User": 0}


def test_the_local_node_is_this_machine():
    spec = bootstrap.local_node_spec()
    assert spec["resource_group"] == "default" and spec["name"]
    assert int(spec["capacity"]["cpu"]) >= 1 and int(spec["capacity"]["mem"]) > 0


@pytest.mark.parametrize("url, where", [
    ("sqlite:///{tmp}/db/hubgrid.sqlite", "{tmp}/db/session-logs"),
    ("sqlite:///:memory:", "{cwd}/session-logs"),
    ("postgresql+psycopg2://u:p@db.example.org/hubgrid", "{cwd}/session-logs"),
    ("not a url", "{cwd}/session-logs"),
])
def test_state_lives_next_to_the_sqlite_database_else_in_the_working_directory(
        tmp_path, monkeypatch, url, where):
    cwd = tmp_path / "state"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    got = bootstrap.state_path(url.format(tmp=tmp_path), "session-logs")
    assert got == where.format(tmp=tmp_path.resolve(), cwd=cwd.resolve())


def test_the_log_store_directory_is_the_services_own(tmp_path):
    store = bootstrap.open_log_store(str(tmp_path / "a" / "logs"), 4096)
    assert stat.S_IMODE((tmp_path / "a" / "logs").stat().st_mode) == 0o700
    assert store.root == tmp_path / "a" / "logs"


def test_a_default_host_that_is_not_configured_is_warned_about(tmp_path, caplog):
    with caplog.at_level(logging.INFO, LOG.name):
        hosts = bootstrap.resolve_storage({"local": {"path": str(tmp_path / "v")}}, "nfs", LOG)
    assert list(hosts) == ["local"] and (tmp_path / "v").is_dir()
    assert any(r.levelno == logging.WARNING and "default_vfolder_host 'nfs'" in r.getMessage()
               for r in caplog.records)
