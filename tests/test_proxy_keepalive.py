"""The hub's configurable-http-proxy keeps its connections to Unix-socket
targets (isolated sessions) alive (hub_ext/proxyrun.py,
hub_ext/proxy/unix_keepalive.mjs): without it every request went with
"Connection: close" and about one PUT in fifty failed with EPIPE (a 503).
A real proxy, started with the hub's command, in front of a real server on a
Unix socket that counts its connections."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
import requests

from hub_ext.proxyrun import PRELOAD, proxy_command
from hub_fixtures import require


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class UnixServer(ThreadingHTTPServer):
    address_family = socket.AF_UNIX

    def server_bind(self):
        self.socket.bind(self.server_address)
        self.server_name, self.server_port = "session", 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    connections = 0

    def setup(self):
        super().setup()
        type(self).connections += 1

    def do_PUT(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def proxy(tmp_path):
    command = proxy_command()
    require("configurable-http-proxy and node on PATH", len(command) == 4,
            "run `make test` (node_modules/.bin on PATH)")
    path = str(tmp_path / "jupyter.sock")
    Handler.connections = 0
    server = UnixServer(path, Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port, api = free_port(), free_port()
    proc = subprocess.Popen([*command, "--ip", "127.0.0.1", "--port", str(port),
                             "--api-ip", "127.0.0.1", "--api-port", str(api)],
                            env={"CONFIGPROXY_AUTH_TOKEN": "t", "PATH": "/usr/bin:/bin"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = requests.post(f"http://127.0.0.1:{api}/api/routes/user/a",
                                  json={"target": "http+unix://" + quote(path, safe="")},
                                  headers={"Authorization": "token t"}, timeout=5)
                assert r.status_code == 201, r.text
                break
            except requests.ConnectionError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "the proxy did not start"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/user/a/"
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()
        server.shutdown()
        server.server_close()


def test_requests_to_a_unix_socket_share_one_kept_alive_connection(proxy):
    with requests.Session() as s:
        for _ in range(20):
            assert s.put(proxy + "x", data=b"y" * 2000, timeout=10).status_code == 204
    assert Handler.connections == 1  # without the preload: 20, each closed after its answer


def test_the_command_preloads_the_agent_or_falls_back(tmp_path):
    fake = tmp_path / "configurable-http-proxy"
    fake.write_text("")
    command = proxy_command(str(fake))
    assert command[1:] == ["--import", PRELOAD.as_uri(), str(fake)]
    assert command[0].endswith("node") and PRELOAD.is_file()
    assert proxy_command("") == ["configurable-http-proxy"]  # not on PATH: the hub's default
