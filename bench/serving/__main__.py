"""Serving's two waits: a cold start, and a load step until a new replica serves.

    python -m bench.serving [--runs 3] [--docker-url unix:///var/run/docker.sock]
                            [--image hubgrid/inference:latest]

Real parts: a hub (jupyterhub_config.py, HUBGRID_SPAWNER=docker) with its
proxy, service and gateway (haproxy), replicas of the echo-chat stand-in
(examples/models/echo-chat) started by the serving controller on the Docker
engine. One user, one inference group, one endpoint with two rules: more
than 3 calls a second per replica adds one replica (up to 2, no cooldown);
under 0.5 a second takes one away (down to zero, 5 s cooldown).

- **cold start** (``--runs`` times): the endpoint at zero replicas, one chat
  call through the gateway (openai client), timed from the call to its
  answer: the gateway asks the service for a replica, the controller starts
  it, the hub spawns it, the gateway routes it, haproxy's probe passes.
- **load step** (``--runs`` times): the endpoint at one replica; two clients
  start calling as fast as they answer; timed from the first call to the
  endpoint's second replica serving (the controller saw it ready), and to
  the gateway's first answer from it (its calls counted by haproxy).

Prints the median and each run. Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import requests

from bench.hubproc import Hub, launch_hub, stop_hub

REPO = Path(__file__).resolve().parents[2]
GATEWAY = "/services/hubgrid-gateway/v1"
RULES = [
    {"metric": "requests_per_second", "comparator": "gt", "threshold": "3", "step": 1,
     "cooldown": 0, "min_replicas": 0, "max_replicas": 2},
    {"metric": "requests_per_second", "comparator": "lt", "threshold": "0.5", "step": -1,
     "cooldown": 5, "min_replicas": 0, "max_replicas": 2},
]


def _ok(r: requests.Response, *codes: int) -> dict:
    if r.status_code not in codes:
        raise RuntimeError(f"{r.request.method} {r.url}: {r.status_code} {r.text[:300]}")
    return r.json() if r.content else {}


def until(cond, what: str, timeout: float = 300, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(interval)
    raise RuntimeError(f"{what}: not within {timeout:g} s")


def summary(values: list[float]) -> dict:
    """Median and the runs, rounded to the hundredth of a second."""
    return {"median": round(statistics.median(values), 2), "runs": [round(v, 2) for v in values]}


class Bench:
    def __init__(self, hub: Hub, user: str, image: str, url: str):
        self.hub, self.user = hub, user
        if hub.login(user).status_code != 302:
            raise RuntimeError(f"login of {user} failed")
        me = _ok(hub.call("GET", "me", user), 200)
        project = me["projects"][0]["name"] if me.get("projects") else "default"
        _ok(hub.call("POST", "resource-groups", "admin",
                     json={"name": "bench-serve", "session_types": ["inference"]}), 201)
        _ok(hub.call("PUT", "resource-groups/bench-serve/grants", "admin",
                     json={"domain": me["domain"]}), 201)
        _ok(hub.call("POST", "nodes", "admin", json={
            "name": "bench-serve-a", "resource_group": "bench-serve", "backend_url": url,
            "capacity": {"cpu": "16", "mem": "32G"}}), 201)
        _ok(hub.call("POST", "images/scan", "admin"), 200)
        folder = _ok(hub.call("POST", "vfolders", user, json={"name": "echo"}), 201)["id"]
        _ok(hub.call("PUT", f"vfolders/{folder}/upload?path=model-definition.yaml", user,
                     data=(REPO / "examples/models/echo-chat/model-definition.yaml")
                     .read_bytes()), 201)
        self.e = _ok(hub.call("POST", "endpoints", user, json={
            "name": "bench", "project": project, "resource_group": "bench-serve",
            "image": image, "model_folder": folder, "slots": {"cpu": "0.5", "mem": "256M"},
            "replicas": 1}), 201)
        self.path = f"endpoints/{self.e['id']}"
        self.token = _ok(hub.call("POST", f"{self.path}/tokens", user,
                                  json={"expires_in_days": 1}), 201)["token"]
        self.serving(1)

    def get(self) -> dict:
        return _ok(self.hub.call("GET", self.path, self.user), 200)

    def serving(self, n: int, timeout: float = 300) -> dict:
        """The endpoint once ``n`` replicas serve and no other is left."""
        def check():
            e = self.get()
            return e if (e["running_replicas"] == n and len(e["replicas_detail"]) == n
                         and e["replicas"] == n) else None
        return until(check, f"{n} replica(s) serving", timeout, 0.2)

    def client(self, timeout: float = 300) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.hub.url + GATEWAY, api_key=self.token,
                             max_retries=0, timeout=timeout)

    def chat(self, c: openai.OpenAI, text: str) -> None:
        a = c.chat.completions.create(model="bench", messages=[{"role": "user", "content": text}])
        if a.choices[0].message.content != f"echo: {text}":
            raise RuntimeError(f"unexpected answer {a.choices[0].message.content!r}")

    def rules(self, rules: list | None) -> None:
        _ok(self.hub.call("PATCH", self.path, self.user, json={"autoscaling": rules}), 200)

    def cold_start(self) -> float:
        """At zero (the quiet rule takes it there), then one call."""
        self.rules([RULES[1]])
        self.serving(0)
        self.rules(RULES)
        time.sleep(2.5)  # the gateway's table says zero (it syncs every 2 s)
        with self.client() as c:
            t0 = time.perf_counter()
            self.chat(c, "wake up")
            took = time.perf_counter() - t0
        self.rules(None)
        _ok(self.hub.call("PATCH", self.path, self.user, json={"replicas": 1}), 200)
        self.serving(1)
        return took

    def load_step(self) -> tuple[float, float]:
        """From one replica, calls as fast as they come: until a second serves,
        and until the gateway's first answer from it."""
        first = {r["name"] for r in self.get()["replicas_detail"]}
        stop = threading.Event()

        def load():
            with self.client(60) as c:
                while not stop.is_set():
                    self.chat(c, "busy")

        self.rules([RULES[0]])
        with ThreadPoolExecutor(2) as pool:
            t0 = time.perf_counter()
            loads = [pool.submit(load) for _ in range(2)]
            try:
                self.serving(2)
                to_serving = time.perf_counter() - t0

                def answered():
                    h = self.get().get("health") or {}
                    return any(r["name"] not in first and r.get("calls", 0) > 0
                               for r in h.get("replicas", ()))
                until(answered, "the new replica answering", 120, 0.1)
                to_answer = time.perf_counter() - t0
            finally:
                stop.set()
                for f in loads:
                    f.result()
        self.rules(None)
        _ok(self.hub.call("PATCH", self.path, self.user, json={"replicas": 1}), 200)
        self.serving(1)
        return to_serving, to_answer


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.serving", description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--docker-url", default="unix:///var/run/docker.sock")
    ap.add_argument("--image", default="hubgrid/inference:latest")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs: at least 1")
    with tempfile.TemporaryDirectory(prefix="hubgrid-bench-serving-") as tmp:
        state = Path(tmp) / "hub"
        state.mkdir()
        hub = launch_hub(state, {"HUBGRID_SPAWNER": "docker",
                                 "HUBGRID_DOCKER_URL": args.docker_url},
                         config="c.Spawner.start_timeout = 300\nc.Spawner.http_timeout = 300\n")
        try:
            b = Bench(hub, f"bs{uuid.uuid4().hex[:6]}", args.image, args.docker_url)
            cold = [b.cold_start() for _ in range(args.runs)]
            steps = [b.load_step() for _ in range(args.runs)]
            b.rules(None)
            hub.call("DELETE", b.path, b.user)
            until(lambda: hub.call("GET", b.path, b.user).status_code == 404,
                  "the endpoint gone", 120, 0.5)
        finally:
            stop_hub(hub)
    out = {"cold_start": summary(cold),
           "load_step_to_serving": summary([s for s, _ in steps]),
           "load_step_to_answer": summary([a for _, a in steps])}
    print(f"serving waits, {args.runs} run(s), image {args.image} (echo-chat stand-in)")
    for name, label in (("cold_start", "cold start (call at zero -> answer)"),
                        ("load_step_to_serving", "load step -> 2nd replica serving"),
                        ("load_step_to_answer", "load step -> 2nd replica answering")):
        print(f"  {label:38s} median {out[name]['median']:6.2f} s   runs {out[name]['runs']}")
    return out


if __name__ == "__main__":
    main()
