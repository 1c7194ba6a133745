"""The spawner's side of replicas as plain data: the spawn options of an
inference session, the command and environment of a replica
(spawner/inference.py) and the model folder's mount at /models."""

from __future__ import annotations

import json
import logging

import pytest

from spawner.builders import Mount, vfolder_mounts
from spawner.inference import BRIDGE, replica_command, replica_environment
from spawner.options import OptionsError, parse_options

EID = "0123456789abcdef0123456789abcdef"
SERVICE = {"model": "m", "argv": ["serve", "--port", "8000"], "port": 8000,
           "health_path": "/health"}


def test_an_inference_session_and_only_one_names_its_endpoint():
    opts, _ = parse_options({"session_type": "inference", "endpoint": EID})
    assert (opts.session_type, opts.endpoint) == ("inference", EID)
    for bad in ({"session_type": "inference"}, {"endpoint": EID},
                {"session_type": "batch", "command": "true", "endpoint": EID}):
        with pytest.raises(OptionsError, match="names its endpoint"):
            parse_options(bad)
    with pytest.raises(OptionsError, match="endpoint"):
        parse_options({"session_type": "inference", "endpoint": "../x"})
    with pytest.raises(OptionsError, match="only batch sessions take a command"):
        parse_options({"session_type": "inference", "endpoint": EID, "command": "x"})


def test_a_server_that_takes_the_socket_runs_as_defined():
    service = SERVICE | {"unix_socket": True}
    assert replica_command(service) == ["serve", "--port", "8000"]
    env = replica_environment({"JUPYTERHUB_API_TOKEN": "secret", "JPY_API_TOKEN": "secret",
                               "HUBGRID_RELAY_PORT": "8081", "HUBGRID_API_URL": "http://x",
                               "HUBGRID_SERVER_SOCKET": "/run/hubgrid/jupyter.sock",
                               "HUBGRID_ALLOCATION": "a1", "PATH": "/bin"}, service)
    assert env == {"HUBGRID_ALLOCATION": "a1", "PATH": "/bin",
                   "HUBGRID_SERVICE_SOCKET": "/run/hubgrid/jupyter.sock",
                   "HUBGRID_SERVICE_PORT": "8000", "HUBGRID_MODEL_NAME": "m"}


def test_a_server_on_tcp_only_runs_under_the_bridge():
    service = SERVICE | {"unix_socket": False}
    assert replica_command(service) == [BRIDGE, "/run/hubgrid/jupyter.sock", "8000", "--",
                                        "serve", "--port", "8000"]
    assert replica_command(SERVICE)[0] == BRIDGE  # not said: bridged
    env = replica_environment({"JUPYTERHUB_API_TOKEN": "secret"}, service)
    assert env == {"HUBGRID_SERVICE_PORT": "8000", "HUBGRID_MODEL_NAME": "m"}


def test_the_model_folder_mounts_read_only_at_its_target():
    mounts = [{"folder": "f1", "name": "minilm", "path": "/srv/f1", "mode": "ro",
               "target": "/models"}]
    assert vfolder_mounts(mounts, "/home/jovyan") == (Mount("/srv/f1", "/models", True),)
    twice = mounts + [{"folder": "f2", "name": "other", "path": "/srv/f2", "mode": "ro",
                       "target": "/models"}]
    with pytest.raises(ValueError, match="cannot be mounted at '/models'"):
        vfolder_mounts(twice, "/home/jovyan")
    with pytest.raises(ValueError, match="cannot be mounted at 'models'"):
        vfolder_mounts([mounts[0] | {"target": "models"}], "/home/jovyan")


def test_pre_start_actions_run_first_and_travel_in_the_environment():
    actions = [{"action": "log", "args": {"body": "hi", "debug": False}},
               {"action": "mkdir", "args": {"path": "/tmp/x"}}]
    service = SERVICE | {"unix_socket": True, "pre_start": actions}
    assert replica_command(service) == ["hubgrid-prestart", "--", "serve", "--port", "8000"]
    bridged = SERVICE | {"pre_start": actions}
    assert replica_command(bridged)[:3] == ["hubgrid-prestart", "--", BRIDGE]
    env = replica_environment({}, service)
    assert json.loads(env["HUBGRID_PRESTART"]) == actions
    assert "HUBGRID_PRESTART" not in replica_environment({}, SERVICE | {"pre_start": []})


# -- the mixin, with test doubles of the backend and the service (no hub) ----

async def test_a_backend_without_replicas_refuses_an_inference_start_before_asking():
    from jupyterhub.spawner import SpawnException
    from test_spawner_user_options import Probe, RecordingService, spawner

    p = spawner(Probe, logging.getLogger("test.inference.refuse"))
    p.service = RecordingService()
    p.user_options = {"project": "ml", "resource_group": "serve", "cpu": "1", "mem": "1G",
                      "session_type": "inference", "endpoint": EID}
    with pytest.raises(SpawnException, match="does not run inference sessions") as e:
        await p.start()
    assert e.value.status_code == 400 and p.service.bodies == []




async def test_a_replica_asks_with_its_endpoint_and_a_failed_start_says_why_at_release():
    from test_spawner_user_options import Probe, RecordingService, StartsAtOnce, spawner
    from spawner.mixin import HubgridSpawnerMixin

    class Releases(RecordingService):
        def __init__(self):
            super().__init__()
            self.released: list[str] = []

        async def release(self, alloc, reason, exit_code=None):
            self.released.append(reason)

    class ReplicaProbe(Probe):
        runs_inference = True

    class FailingBackend(StartsAtOnce):
        async def start(self):
            from jupyterhub.spawner import SpawnException

            raise SpawnException("image x is not on node n-1", reason="image",
                                 status_code=409)

    class FailingReplica(HubgridSpawnerMixin, FailingBackend):
        runs_inference = True
        service = None

        @property
        def hubgrid(self):
            return self.service

    for cls in (ReplicaProbe, FailingReplica):
        p = spawner(cls, logging.getLogger("test.inference.ask"))
        p.service = Releases()
        p.user_options = {"project": "ml", "resource_group": "gpuhalf", "cpu": "1",
                          "mem": "2G", "gpu_shares": "0.5", "session_type": "inference",
                          "endpoint": EID}
        if cls is ReplicaProbe:
            await p.start()
            [body] = p.service.bodies
            assert (body["session_type"], body["endpoint"]) == ("inference", EID)
        else:
            with pytest.raises(Exception, match="image x is not on node n-1"):
                await p.start()
            assert p.service.released == [
                "the server failed to start: image x is not on node n-1"]
