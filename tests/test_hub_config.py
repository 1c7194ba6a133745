"""hub_ext.config.configure(): what it sets in a JupyterHub config."""

import os
import sys

import pytest
from traitlets.config import Config

from hub_ext.config import GATEWAY_NAME, SERVICE_NAME, configure


def test_configure_lifts_the_concurrent_spawn_limit_for_queued_sessions(tmp_path):
    c = Config()
    configure(c, state_dir=tmp_path)
    assert c.JupyterHub.concurrent_spawn_limit == 0
    assert [s["name"] for s in c.JupyterHub.services.get_value([])] == [SERVICE_NAME,
                                                                        GATEWAY_NAME]


def test_the_serving_gateway_reaches_the_service_with_the_internal_token(tmp_path):
    c = Config()
    configure(c, state_dir=tmp_path, gateway_port=10999)
    hubgrid, gateway = c.JupyterHub.services.get_value([])
    assert gateway["url"] == "http://127.0.0.1:10999"
    assert gateway["command"] == [sys.executable, "-m", "gateway"]
    env = gateway["environment"]
    assert env["HUBGRID_INTERNAL_TOKEN"] == hubgrid["environment"]["HUBGRID_INTERNAL_TOKEN"]
    assert env["HUBGRID_API_URL"] == "http://127.0.0.1:10101/services/hubgrid/api/v1/"
    assert env["HUBGRID_GATEWAY_RUN_DIR"] == str(tmp_path.resolve() / "gateway")
    c2 = Config()
    configure(c2, state_dir=tmp_path, gateway_port=None)
    assert [s["name"] for s in c2.JupyterHub.services.get_value([])] == [SERVICE_NAME]


def test_configure_keeps_a_concurrent_spawn_limit_set_before(tmp_path):
    c = Config()
    c.JupyterHub.concurrent_spawn_limit = 20
    configure(c, state_dir=tmp_path)
    assert c.JupyterHub.concurrent_spawn_limit == 20


def test_configure_passes_the_service_environment(tmp_path):
    c = Config()
    configure(c, state_dir=tmp_path, environment={"HUBGRID_DOCKER_HOSTS": "unix:///x.sock"})
    env = c.JupyterHub.services.get_value([])[0]["environment"]
    assert env["HUBGRID_DOCKER_HOSTS"] == "unix:///x.sock"
    assert env["HUBGRID_INTERNAL_TOKEN"] == (tmp_path / "hubgrid-internal-token").read_text().strip()


@pytest.mark.parametrize("backend", ["local", "slurm"])
def test_sessions_run_from_this_venv_with_its_bin_first_on_path(backend, tmp_path, monkeypatch):
    """Local and Slurm sessions run this venv's Jupyter (it holds the Lab
    extension), and its ``hubgrid`` command is the one a Lab terminal finds."""
    from pathlib import Path

    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setenv("HUBGRID_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("HUBGRID_SPAWNER", backend)
    repo = Path(__file__).resolve().parent.parent
    c = PyFileConfigLoader("jupyterhub_config.py", path=str(repo)).load_config()
    venv_bin = str(Path(sys.executable).parent)
    assert c.Spawner.cmd == [f"{venv_bin}/jupyterhub-singleuser"]
    assert c.Spawner.environment["PATH"].split(os.pathsep)[0] == venv_bin
    assert (Path(venv_bin) / "hubgrid").is_file()


def test_configure_sets_the_proxy_that_never_routes_replicas_unless_one_was_set(tmp_path):
    from hub_ext.proxyclass import routed

    c = Config()
    configure(c, state_dir=tmp_path)
    assert c.JupyterHub.proxy_class == "hub_ext.proxyclass.HubgridProxy"
    mine = Config()
    mine.JupyterHub.proxy_class = "traefik"
    configure(mine, state_dir=tmp_path)
    assert mine.JupyterHub.proxy_class == "traefik"

    class Spawner:  # what routed() reads of a spawner: its user_options
        def __init__(self, options):
            self.user_options = options

    assert routed(Spawner({"session_type": "batch"})) and routed(Spawner(None))
    assert not routed(Spawner({"session_type": "inference", "endpoint": "0" * 32}))


async def test_the_proxy_is_not_asked_to_remove_a_route_a_cancelled_start_never_got():
    from types import SimpleNamespace

    from hub_ext.proxyclass import HubgridProxy

    class Proxy(HubgridProxy):  # the proxy's table, as calls to it
        deleted: list = []

        async def delete_route(self, routespec):
            self.deleted.append(routespec)

    def user(**spawner):
        spawner = SimpleNamespace(user_options={}, _log_name="alice", **spawner)
        return SimpleNamespace(name="alice", proxy_spec="/user/alice/", spawners={"": spawner})

    proxy = Proxy()
    await proxy.delete_user(user(cancelled_message="Your queued start was cancelled: ..."))
    assert proxy.deleted == []
    await proxy.delete_user(user(cancelled_message=""))  # a server that ran: its route goes
    assert proxy.deleted == ["/user/alice/"]
