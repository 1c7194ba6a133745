"""The gateway's URL as the session side gives it: the Lab server's
``hubgrid/gateway-info`` (what the Serving page shows for this Lab's
notebooks and terminals: the server's own gateway URL, never a token) and
``hubgrid serve show``'s openai snippet. A real Jupyter server
(tests/lab_fixtures.py), no hub."""

from __future__ import annotations

import ast

from jupyterlab_hubgrid.cli.serveview import openai_snippet, render_endpoint
from jupyterlab_hubgrid.gatewayroutes import gateway_info
from lab_fixtures import lab_server

RELAYED = "http://127.0.0.1:8081/services/hubgrid-gateway/"


def test_gateway_info_names_the_servers_gateway_and_the_token_variable_only():
    info = gateway_info(RELAYED, {"JUPYTERHUB_API_TOKEN": "0123abcd" * 4})
    assert info == {"gateway_url": RELAYED, "openai_base_url": RELAYED + "v1",
                    "token_variable": "JUPYTERHUB_API_TOKEN"}
    assert "0123abcd" not in repr(info)  # the variable's name, never its value
    assert gateway_info(RELAYED.rstrip("/"), {})["openai_base_url"] == RELAYED + "v1"
    assert gateway_info(RELAYED, {})["token_variable"] is None  # no hub token: an endpoint token
    assert gateway_info("", {"JUPYTERHUB_API_TOKEN": "t"})["openai_base_url"] is None


async def test_the_lab_server_says_where_it_reaches_the_gateway(tmp_path, monkeypatch):
    async with lab_server(tmp_path, monkeypatch, owner="alice", api_token="t",
                          gateway_url=RELAYED) as lab:
        # (lab_server clears the session's variables; its kernels would have this one)
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "f" * 32)
        resp, info = await lab.call("GET", "hubgrid/gateway-info")
        assert resp.code == 200, info
        assert info == {"gateway_url": RELAYED, "openai_base_url": RELAYED + "v1",
                        "token_variable": "JUPYTERHUB_API_TOKEN"}
        resp, _ = await lab.call("GET", "hubgrid/gateway-info", token=False)
        assert resp.code == 403  # Jupyter's login first
    # a visitor of alice's server is refused, as for every hubgrid/ call
    async with lab_server(tmp_path, monkeypatch, user="gina", owner="alice", api_token="t",
                          gateway_url=RELAYED) as lab:
        resp, err = await lab.call("GET", "hubgrid/gateway-info")
        assert resp.code == 403 and "only alice" in err["message"]


def test_the_snippet_is_python_that_calls_the_given_url_and_model():
    code = openai_snippet(RELAYED + "v1", 'we"ird')
    tree = ast.parse(code)  # valid Python, whatever the model's name holds
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert RELAYED + "v1" in strings and 'we"ird' in strings
    assert 'os.environ["JUPYTERHUB_API_TOKEN"]' in code


def test_show_prints_the_snippet_only_where_the_gateway_is_known():
    e = {"id": "a" * 32, "name": "echo", "project": "ml", "domain": "acme",
         "model_folder": {"id": "f", "name": "echo"}, "slots": {}, "replicas": 1,
         "state": "running", "health": {}, "replicas_detail": [], "autoscaling": []}
    shown = render_endpoint({**e, "gateway": {"url": RELAYED + "e/x/",
                                              "openai_base_url": RELAYED + "v1", "model": "echo"}})
    assert f'  client = OpenAI(base_url="{RELAYED}v1",' in shown.splitlines()
    assert '  client.chat.completions.create(model="echo",' in shown.splitlines()
    bare = render_endpoint({**e, "gateway": {"url": None, "openai_base_url": None,
                                             "model": "echo"}})
    assert "OpenAI(" not in bare
