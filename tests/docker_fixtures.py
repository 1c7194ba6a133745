"""The shared hub of the Docker session tests (tests/test_docker_sessions.py,
tests/test_docker_isolation.py): one real hub whose resource group ``dock``
has two nodes, the two Docker engines on this machine (started by `make
test`: scripts/start-docker.sh --engines 2; their URLs in
HUBGRID_TEST_DOCKER_HOSTS). Session-scoped (registered in conftest.py): the
modules share it, so CI starts one hub for both.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

import docker
import pytest

from hub_fixtures import _ok, build_world, launch_hub, require, stop_hub
from session_fixtures import allocations

HOSTS = [h for h in os.environ.get("HUBGRID_TEST_DOCKER_HOSTS", "").split(",") if h]
IMAGE = "hubgrid/base:latest"
MiB = 2**20
#: a reclaim pass every second (the lifetime test); the demo's umask
#: (scripts/run.sh): what the service writes into folders must still be the
#: sessions' (uploads must not land root:root 0600 under it)
SERVICE_CONFIG = ("c.HubgridService.reclaim_interval = 1.0\n"
                  "import os\nos.umask(0o077)\n")


@dataclass
class Dock:
    hub: object
    engines: dict  # url -> docker.APIClient

    def containers(self, **labels) -> list[tuple[str, dict]]:
        """(engine url, container) of every container, running or not, with ``labels``."""
        filters = {"label": [f"hubgrid.{k}={v}" for k, v in labels.items()] or ["hubgrid.allocation"]}
        return [(url, c) for url, cl in self.engines.items()
                for c in cl.containers(all=True, filters=filters)]

    def container(self, alloc_id: str) -> tuple[str, dict]:
        found = self.containers(allocation=alloc_id)
        assert len(found) == 1, found
        return found[0]

    def network_mode(self, url: str, info: dict) -> str:
        """A container's network as Docker set it up: its own NetworkMode, or
        that of the network sandbox it joined (spawner/sandboxes.py)."""
        mode = info["HostConfig"]["NetworkMode"]
        if mode.startswith("container:"):
            mode = self.engines[url].inspect_container(mode.split(":", 1)[1])["HostConfig"][
                "NetworkMode"]
        return mode

    def exec(self, url: str, container_id: str, cmd: list[str]) -> str:
        cl = self.engines[url]
        ex = cl.exec_create(container_id, cmd)
        out = cl.exec_start(ex["Id"]).decode()
        assert cl.exec_inspect(ex["Id"])["ExitCode"] == 0, out
        return out.strip()


def require_image(url: str, image: str = IMAGE) -> docker.APIClient:
    """The engine at ``url``, or the test is skipped (locally) / failed (CI)
    when it does not answer or lacks ``image``."""
    try:
        cl = docker.APIClient(base_url=url, version="auto", timeout=30)
        cl.inspect_image(image)
        return cl
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        require(f"Docker engine {url} with {image}", False, f"{e} (run `make test`)")


def _engines() -> dict:
    engines = {url: require_image(url) for url in HOSTS}
    require("two Docker engines", len(engines) >= 2,
            "run `make test` (scripts/start-docker.sh --engines 2, scripts/build-images.sh)")
    return engines


@contextmanager
def docker_hub(state, engines: dict, config: str, nodes, service_config: str = ""):
    """A real hub with Docker sessions on the first engine by default, the
    demo's world and resource group ``dock`` of ``nodes`` ((name, engine
    URL, declared GPUs)); stopped and its containers removed afterwards:
    only the sessions this hub's service allocated (the engines are shared
    with `make run` and other test hubs, whose sessions are left alone)."""
    env = {"HUBGRID_SPAWNER": "docker", "HUBGRID_DOCKER_URL": HOSTS[0]}
    hub = launch_hub(state, env, config=config, service_config=service_config)
    d = Dock(hub=hub, engines=engines)
    try:
        build_world(hub)
        _ok(hub.call("POST", "resource-groups", "admin", json={"name": "dock"}), 201)
        _ok(hub.call("PUT", "resource-groups/dock/grants", "admin", json={"domain": "acme"}), 201)
        for name, url, gpus in nodes:
            _ok(hub.call("POST", "nodes", "admin", json={
                "name": name, "resource_group": "dock", "backend_url": url,
                "capacity": {"cpu": "2", "mem": "4G"},
                "devices": [{"index": i, "model": "A100", "memory": 40 * 2**30} for i in range(gpus)],
            }), 201)
        _ok(hub.call("POST", "images/scan", "admin"), 200)
        yield d
    finally:
        try:
            ours = allocation_ids(d.hub)
        finally:
            stop_hub(d.hub)
        for url, c in d.containers():
            if c["Labels"].get("hubgrid.allocation") in ours:
                engines[url].remove_container(c["Id"], force=True)
        # its idle network sandboxes (labelled with its API URL: its port is its own)
        port = f":{hub.ports['HUBGRID_HUB_PORT']}/"
        for url, cl in engines.items():
            for c in cl.containers(all=True, filters={"label": ["hubgrid.sandbox"]}):
                if port in c["Labels"]["hubgrid.sandbox"]:
                    cl.remove_container(c["Id"], force=True)


def allocation_ids(hub) -> set[str]:
    """Every allocation ``hub``'s service made, of any user and state."""
    r = hub.call("GET", "allocations", "admin")
    assert r.status_code == 200, r.text
    return {a["id"] for a in r.json()}


#: the shared hub's settings (a test that restarts it keeps them)
DOCK_CONFIG = ("c.HubgridDockerSpawner.pending_poll_interval = 0.5\nc.Spawner.poll_interval = 5\n"
               "c.Spawner.start_timeout = 120\nc.Spawner.http_timeout = 120\n")


@pytest.fixture(scope="session")
def dock(tmp_path_factory):
    with docker_hub(tmp_path_factory.mktemp("docker-hub"), _engines(), DOCK_CONFIG,
                    (("dock-a", HOSTS[0], 2), ("dock-b", HOSTS[1], 0)), SERVICE_CONFIG) as d:
        _ok(d.hub.call("POST", "users", "admin", json={"name": "bob", "domain": "acme",
                                                        "role": "user"}), 201)
        _ok(d.hub.call("PUT", "domains/acme/projects/ml/members/bob", "admin"), 201)
        yield d


def opts(**kw) -> dict:
    return {"project": "ml", "resource_group": "dock", "image": IMAGE, "cpu": "1", "mem": "512M", **kw}


def held(hub, user, server) -> dict:
    found = allocations(hub, user, "allocated", server)
    assert len(found) == 1, found
    return found[0]


def group_on_first_engine(dock, group: str, node: str):
    """A resource group of acme's with one node on the first engine (the
    hub's default engine): sessions of two users land side by side on it."""
    hub = dock.hub
    _ok(hub.call("POST", "resource-groups", "admin", json={"name": group}), 201)
    _ok(hub.call("PUT", f"resource-groups/{group}/grants", "admin", json={"domain": "acme"}), 201)
    _ok(hub.call("POST", "nodes", "admin", json={
        "name": node, "resource_group": group, "backend_url": HOSTS[0],
        "capacity": {"cpu": "2", "mem": "4G"}}), 201)
    return dock
