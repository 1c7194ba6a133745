"""A session image's start: CPU seconds from `docker run` to the server answering.

    python -m bench.imagestart [--image hubgrid/base:latest] [--runs 5]
                               [--docker-url unix:///var/run/docker.sock] [--imports]

Starts the image's start command (its entrypoint and ``jupyterhub-singleuser``)
``--runs`` times as the Docker spawner does (host network, 2 cpu, 1 GiB, the
JupyterHub environment of a user ``u``) and asks ``<prefix>api`` every 20 ms
until it answers. Prints, per run and as medians, the wall seconds and the CPU
seconds the container used until then (user + system, from its cgroup's
cpuacct): the CPU figure hardly moves with the machine's load, the wall one
does. The server checks the hub's API at start: a stand-in on loopback
answers that check (only the version, as a hub would). ``--imports`` adds the
ten modules whose own import costs the server most (``python -X importtime``,
self time, one run).
Needs an engine whose cgroups this host sees (a local engine, cgroup v1 or v2).
"""

from __future__ import annotations

import argparse
import http.server
import json
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import docker
import requests

SERVER_IMPORTS = ("jupyterhub.singleuser", "jupyter_server.serverapp", "jupyterlab.labapp",
                  "jupyter_lsp", "jupyter_server_proxy", "jupyter_server_terminals",
                  "notebook_shim", "jupyterlab_hubgrid")


class HubStandIn(http.server.BaseHTTPRequestHandler):
    """Answers the server's start-up check of the hub API (the version)."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = json.dumps({"version": "bench"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # activity reports

    def log_message(self, *args):
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(container_id: str) -> tuple[float, float]:
    """(user, system) CPU seconds of a container so far, from its cgroup."""
    v1 = Path("/sys/fs/cgroup/cpuacct")
    for d in (v1 / "docker" / container_id, v1 / "system.slice" / f"docker-{container_id}.scope"):
        if (d / "cpuacct.stat").exists():
            stat = dict(line.split() for line in (d / "cpuacct.stat").read_text().splitlines())
            hz = 100  # USER_HZ
            return int(stat["user"]) / hz, int(stat["system"]) / hz
    v2 = Path("/sys/fs/cgroup/system.slice") / f"docker-{container_id}.scope" / "cpu.stat"
    if v2.exists():
        stat = dict(line.split() for line in v2.read_text().splitlines())
        return int(stat["user_usec"]) / 1e6, int(stat["system_usec"]) / 1e6
    raise SystemExit(f"no cgroup of container {container_id[:12]} on this host "
                     "(a remote engine, or an unknown cgroup layout)")


def _env(hub_port: int, port: int) -> dict:
    hub = f"http://127.0.0.1:{hub_port}/hub/api"
    return {"JUPYTERHUB_API_TOKEN": "bench" * 8, "JUPYTERHUB_API_URL": hub,
            "JUPYTERHUB_USER": "u", "JUPYTERHUB_SERVICE_PREFIX": "/user/u/",
            "JUPYTERHUB_BASE_URL": "/", "JUPYTERHUB_CLIENT_ID": "jupyterhub-user-u",
            "JUPYTERHUB_OAUTH_CALLBACK_URL": "/user/u/oauth_callback",
            "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}/user/u/",
            "JUPYTERHUB_SERVER_NAME": "", "JUPYTERHUB_ACTIVITY_URL": f"{hub}/users/u/activity"}


def one_start(client: docker.DockerClient, image: str, hub_port: int,
              timeout: float = 180) -> tuple[float, float, float]:
    """(wall, user, system) seconds from `docker run` to the server answering."""
    port = _free_port()
    t0 = time.perf_counter()
    container = client.containers.run(
        image, ["jupyterhub-singleuser", "--ip=127.0.0.1", f"--port={port}"], detach=True,
        network_mode="host", nano_cpus=2_000_000_000, mem_limit="1g",
        environment=_env(hub_port, port))
    try:
        url = f"http://127.0.0.1:{port}/user/u/api"
        while True:
            try:
                if requests.get(url, timeout=1).status_code < 500:
                    break
            except requests.RequestException:
                pass
            if time.perf_counter() - t0 > timeout:
                raise SystemExit(f"the server did not answer within {timeout} s:\n"
                                 + container.logs()[-2000:].decode(errors="replace"))
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        user, system = cpu_seconds(container.id)
        return wall, user, system
    finally:
        container.remove(force=True)


def top_imports(client: docker.DockerClient, image: str, n: int = 10) -> list[tuple[float, str]]:
    """The ``n`` modules whose own import code costs most (seconds, module)."""
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n"
                                         for m in SERVER_IMPORTS)
    out = client.containers.run(image, ["python3", "-X", "importtime", "-c", code],
                                network_mode="none", remove=True, stdout=False, stderr=True)
    rows = []
    for line in out.decode().splitlines():
        parts = line.split("|")
        own = parts[0].removeprefix("import time:").strip()
        if line.startswith("import time:") and own.isdigit():
            rows.append((int(own) / 1e6, parts[2].strip()))
    return sorted(rows, reverse=True)[:n]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.imagestart",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--image", default="hubgrid/base:latest")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--docker-url", default="unix:///var/run/docker.sock")
    ap.add_argument("--imports", action="store_true")
    args = ap.parse_args(argv)
    hub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HubStandIn)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    client = docker.DockerClient(base_url=args.docker_url, version="auto", timeout=120)
    try:
        runs = []
        print(f"start of {args.image} to its server answering, {args.runs} run(s)")
        for i in range(args.runs):
            wall, user, system = one_start(client, args.image, hub.server_address[1])
            runs.append((wall, user + system))
            print(f"  run {i + 1}: wall {wall:5.2f} s   cpu {user + system:5.2f} s "
                  f"(user {user:.2f}, system {system:.2f})", flush=True)
        out = {"wall": statistics.median(r[0] for r in runs),
               "cpu": statistics.median(r[1] for r in runs), "n": len(runs)}
        print(f"  median: wall {out['wall']:.2f} s, cpu {out['cpu']:.2f} s")
        if args.imports:
            print("  costliest imports (own seconds, one run):")
            for seconds, module in top_imports(client, args.image):
                print(f"    {seconds:6.3f}  {module}")
        return out
    finally:
        hub.shutdown()
        client.close()


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
