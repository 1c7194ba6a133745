"""Where the utilization readings come from (IO): the Docker engine's stats
of the session's container (CPU time and memory of every process in it) and
a pluggable GPU source (NVML on a real GPU node; a declared source in tests
and demos). A failed reading is None ("no data"), never 0."""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal
from typing import Protocol

from .window import Reading

NS = Decimal(10**9)


class GPUSource(Protocol):
    """Reads the GPU utilization and memory use (percent) of a session's GPUs."""

    def read(self, allocation_id: str, node_backend: str,
             indices: list[int]) -> tuple[Decimal | None, Decimal | None]: ...


class NoGPUSource:
    """No GPU metrics anywhere: every GPU reading is "no data"."""

    def read(self, allocation_id, node_backend, indices):
        return None, None


class DeclaredGPUSource:
    """Readings declared by the caller (tests, demos with declared GPUs):
    ``values[allocation_id] = (util, mem)``; an exception instance makes the
    reading fail as a broken driver would."""

    def __init__(self, values: dict | None = None):
        self.values = dict(values or {})

    def read(self, allocation_id, node_backend, indices):
        v = self.values.get(allocation_id)
        if isinstance(v, BaseException):
            raise v
        if v is None:
            return None, None
        return Decimal(str(v[0])), Decimal(str(v[1]))


class NVMLGPUSource:
    """NVML on the service's own node: the mean utilization and memory use of
    the session's device indices. Sessions on other nodes read "no data"
    (their node's agent would have to report them)."""

    def __init__(self, local_backends: tuple[str, ...] = ("", "unix:///var/run/docker.sock")):
        self.local_backends = local_backends

    def read(self, allocation_id, node_backend, indices):
        if node_backend not in self.local_backends or not indices:
            return None, None
        import pynvml  # only where the operator chose NVML

        pynvml.nvmlInit()
        try:
            utils, mems = [], []
            for i in indices:
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                utils.append(Decimal(pynvml.nvmlDeviceGetUtilizationRates(h).gpu))
                m = pynvml.nvmlDeviceGetMemoryInfo(h)
                mems.append(Decimal(m.used) * 100 / Decimal(m.total))
            return sum(utils) / len(utils), sum(mems) / len(mems)
        finally:
            pynvml.nvmlShutdown()


def container_stats(client, allocation_id: str) -> tuple[Decimal, int, int] | None:
    """(cumulative CPU seconds, memory used, memory limit) of the session's
    container on this engine (label ``hubgrid.allocation``); None if it has none."""
    found = client.containers(filters={"label": f"hubgrid.allocation={allocation_id}"})
    if not found:
        return None
    st = client.stats(found[0]["Id"], stream=False, one_shot=True)
    cpu = Decimal(st["cpu_stats"]["cpu_usage"]["total_usage"]) / NS
    mem = st.get("memory_stats") or {}
    extra = mem.get("stats") or {}
    # the page cache the kernel may drop is not use (docker stats does the same)
    cache = extra.get("inactive_file", extra.get("total_inactive_file", 0))
    return cpu, int(mem["usage"]) - int(cache), int(mem["limit"])


def read(targets: list[tuple[str, list[str], str, list[int]]], make_client, timeout: float,
         gpu: GPUSource, now: dt.datetime, log: logging.Logger) -> dict[str, Reading]:
    """One reading per session (blocking): ``targets`` are (allocation id,
    Docker engine URLs to look on, node backend, GPU indices)."""
    clients: dict[str, object] = {}
    out = {}
    for alloc, urls, backend, indices in targets:
        cpu = used = limit = None
        for url in urls:
            try:
                if url not in clients:
                    clients[url] = make_client(url, timeout)
                got = container_stats(clients[url], alloc)
            except Exception as e:  # an engine that fails: no data, never idle
                log.warning("reclaim: docker stats of %s on %s failed: %s", alloc, url, e)
                continue
            if got is not None:
                cpu, used, limit = got
                break
        util = mem = None
        if indices:
            try:
                util, mem = gpu.read(alloc, backend, indices)
            except Exception as e:
                log.warning("reclaim: GPU reading of %s failed (no data): %s", alloc, e)
        out[alloc] = Reading(now, cpu, used, limit, util, mem)
    return out
