"""``hubgrid-admin reconcile`` (quota_service/operations/reconcile_cli.py)
against a canned service on loopback: what it sends, what it prints, and
its exit codes. Against the real service: tests/test_reconcile_chaos.py."""

from __future__ import annotations

import io
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from quota_service.operations import reconcile_cli as cli

DIFF = {"id": "orphan-container:abc123", "kind": "orphan-container",
        "object": "container abc123 (hubgrid-alice\x1b[2J, exited) on unix:///d.sock",
        "why": "its allocation a1 (alice/s) was released", "repair": "remove the container",
        "allocation": "a1", "engine": "unix:///d.sock", "job": None, "domain": "acme",
        "user": "alice"}
SOURCES = {"hub": {"read": True, "servers": 2},
           "docker": {"unix:///d.sock": {"read": True, "containers": 1},
                      "tcp://gpu-2:2375": {"read": True, "containers": 0}},
           "slurm": {"read": False, "skipped": "squeue is not on the service's PATH"},
           "ledger": {"read": True, "live": 3}}


def report(differences=(), repairs=None, complete=True, **sources) -> dict:
    return {"dry_run": repairs is None, "as_of": "2026-03-01T12:00:00+00:00", "grace": 5.0,
            "differences": list(differences), "repairs": repairs,
            "spared": [{"object": "Slurm job 41 (hubgrid-check, RUNNING)",
                        "why": "no allocation names it"}],
            "sources": {**SOURCES, **sources}, "complete": complete,
            "summary": f"{len(differences)} difference(s)"}


class Canned:
    """A loopback HTTP server answering every request with (status, body)."""

    def __init__(self):
        self.answer: tuple[int, dict] = (200, report())
        self.requests: list[tuple[str, str, dict, bytes]] = []
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                canned.requests.append((self.command, self.path, dict(self.headers),
                                        self.rfile.read(length)))
                status, body = canned.answer
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/hubgrid/api/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def service():
    s = Canned()
    yield s
    s.close()


def run(service, *args, env=None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {"HUBGRID_API_URL": service.url, "HUBGRID_ACCESS_KEY": "AK",
           "HUBGRID_SECRET_KEY": "SK"} if env is None else env
    code = cli.main(["reconcile", *args], env=env, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_dry_run_that_finds_differences_lists_them_and_exits_1(service):
    service.answer = (200, report([DIFF]))
    code, out, _ = run(service)
    method, path, headers, _body = service.requests[-1]
    assert (method, path, headers["Authorization"]) == (
        "GET", "/services/hubgrid/api/v1/reconcile", "Keypair AK:SK")
    assert code == cli.DIFFERENCES
    assert "orphan-container   container abc123 (hubgrid-alice\\x1b[2J, exited)" in out
    assert "why:    its allocation a1 (alice/s) was released" in out
    assert "id:     orphan-container:abc123" in out
    assert "left alone (1):\n  Slurm job 41 (hubgrid-check, RUNNING): no allocation names it" in out
    assert ("sources: hub: 2 servers; docker unix:///d.sock: 1 containers; docker "
            "tcp://gpu-2:2375: 0 containers; slurm: not asked (squeue is not on the service's "
            "PATH); ledger: 3 live allocations") in out
    assert "hubgrid-admin reconcile --repair" in out


def test_nothing_found_exits_0_and_json_prints_the_services_report(service):
    service.answer = (200, report())
    code, out, _ = run(service, "--json")
    assert code == cli.OK and json.loads(out) == report()


def test_nothing_found_with_a_source_unread_exits_3(service):
    service.answer = (200, report(complete=False, hub={"read": False, "error": "timeout"}))
    code, out, _ = run(service, env={"HUBGRID_API_URL": service.url + "/",
                                     "JUPYTERHUB_API_TOKEN": "T"})
    assert service.requests[-1][2]["Authorization"] == "token T"
    assert code == cli.INCOMPLETE and "hub: COULD NOT BE READ (timeout)" in out


def test_a_repair_of_listed_ids_posts_them_and_exits_0_when_each_is_done(service):
    service.answer = (200, report([DIFF], repairs=[
        {"id": DIFF["id"], "outcome": "repaired", "detail": "removed container abc123"},
        {"id": "stray-job:9", "outcome": "skipped", "detail": "no longer a difference"}]))
    code, out, _ = run(service, "--repair", "--only", DIFF["id"], "stray-job:9")
    method, _path, _headers, body = service.requests[-1]
    assert (method, json.loads(body)) == ("POST", {"differences": [DIFF["id"], "stray-job:9"]})
    assert code == cli.OK
    assert "repaired: removed container abc123" in out
    assert "stray-job:9: skipped (no longer a difference)" in out


def test_a_repair_of_everything_posts_no_list_and_a_failure_exits_1(service):
    service.answer = (200, report([DIFF], repairs=[
        {"id": DIFF["id"], "outcome": "failed", "detail": "APIError: engine gone"}]))
    code, out, _ = run(service, "--repair")
    assert json.loads(service.requests[-1][3]) == {}
    assert code == cli.DIFFERENCES and "failed: APIError: engine gone" in out


def test_a_refusal_exits_2_with_the_services_message(service):
    service.answer = (403, {"status": 403, "message": "only superadmins may reconcile"})
    code, out, err = run(service)
    assert (code, out) == (cli.ERROR, "")
    assert err == "hubgrid-admin: the service refused: 403 only superadmins may reconcile\n"


@pytest.mark.parametrize("env,message", [
    ({}, "set HUBGRID_API_URL"),
    ({"HUBGRID_API_URL": "ftp://x"}, "set HUBGRID_API_URL"),
    ({"HUBGRID_API_URL": "http://x", "HUBGRID_ACCESS_KEY": "AK"}, "needs both"),
    ({"HUBGRID_API_URL": "http://x"}, "no credentials"),
])
def test_missing_settings_exit_2_saying_what_to_set(service, env, message):
    code, _out, err = run(service, env=env)
    assert code == cli.ERROR and message in err


def test_an_unreachable_service_exits_2():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["reconcile"], env={"HUBGRID_API_URL": f"http://127.0.0.1:{port}/api",
                                        "JUPYTERHUB_API_TOKEN": "T"}, out=out, err=err)
    assert code == cli.ERROR and "cannot reach the hubgrid service" in err.getvalue()


def test_only_without_repair_is_a_usage_error(service):
    code, _out, err = run(service, "--only", "x")
    assert code == cli.ERROR and "--only goes with --repair" in err
