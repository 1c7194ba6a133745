"""The spawner's side of replicas as plain data: the spawn options of an
inference session, the command and environment of a replica
(spawner/inference.py) and the model folder's mount at /models."""

from __future__ import annotations

import json

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
