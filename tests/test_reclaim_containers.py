"""The utilization rule's CPU reading on a real container (Backend.AI #3857,
#6092, #2804: CPU summed over processes and normalised per granted core).

A container on a real Docker engine, granted 2 cores (``NanoCpus``, as the
Docker spawner grants them) and labelled with an allocation id, is read the
way the reclaim pass reads it (``sources.read``: the engine's stats) into a
time-based window (``window.average`` with the granted cores): two busy
processes read about 100 %, not 200 %; one reads about 50 %. On a loaded
machine the processes get less than a core each, so the reading is checked
against the processes' own CPU accounting (summed, per granted core), and
against the bounds no correct reading can pass.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from decimal import Decimal

import pytest

from quota_service.operations.reclaim import sources
from quota_service.operations.reclaim.sources import NoGPUSource
from quota_service.operations.reclaim.window import Window, average
from quota_service.sessions.dockerscan import docker_client
from docker_fixtures import HOSTS, IMAGE, _engines

GRANTED = Decimal(2)
LOG = logging.getLogger("test_reclaim_containers")


@pytest.fixture(scope="module")
def container():
    engines = _engines()
    url = HOSTS[0]
    cl = engines[url]
    alloc = "cpu-" + uuid.uuid4().hex[:8]
    c = cl.create_container(IMAGE, command=["sleep", "300"], labels={"hubgrid.allocation": alloc},
                            entrypoint=[], host_config=cl.create_host_config(
                                nano_cpus=int(GRANTED * 10**9), mem_limit=256 * 2**20))
    try:
        cl.start(c["Id"])
        yield cl, url, c["Id"], alloc
    finally:
        cl.remove_container(c["Id"], force=True)


def busy(cl, cid: str) -> None:
    """One more process spinning on a core, inside the container."""
    ex = cl.exec_create(cid, ["sh", "-c", "while :; do :; done"])
    cl.exec_start(ex["Id"], detach=True)


def process_cpu(cl, cid: str) -> Decimal:
    """CPU seconds of every process in the container, from each one's own
    /proc/<pid>/stat (utime + stime, in clock ticks of 1/100 s): the ground
    truth the engine's reading must agree with."""
    ex = cl.exec_create(cid, ["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null"])
    ticks = 0
    for line in cl.exec_start(ex["Id"]).decode().splitlines():
        fields = line.rsplit(")", 1)[-1].split()
        if len(fields) > 12:
            ticks += int(fields[11]) + int(fields[12])
    return Decimal(ticks) / 100


def cpu_over(cl, cid: str, url: str, alloc: str, seconds: float) -> tuple[Decimal, Decimal]:
    """(the window's CPU average over ``seconds`` of readings, as the pass
    reads them; the processes' own CPU time over the same time, per granted core)."""
    w = Window()
    truth0, t0 = process_cpu(cl, cid), time.monotonic()
    while True:
        now = dt.datetime.now(dt.timezone.utc)
        reading = sources.read([(alloc, [url], url, [])], docker_client, 10.0, NoGPUSource(),
                               now, LOG)[alloc]
        assert reading.cpu_seconds is not None, "no stats from the engine"
        w.add(reading, seconds + 5)
        if time.monotonic() - t0 >= seconds:
            break
        time.sleep(0.5)  # the interval between two readings of the window
    truth = (process_cpu(cl, cid) - truth0) / Decimal(str(time.monotonic() - t0)) / GRANTED * 100
    span = int((w.readings[-1].at - w.readings[0].at).total_seconds())
    avg = average(w.readings, w.readings[-1].at, span, GRANTED, gpus=False)
    assert avg.full, avg
    return avg.values["cpu"], truth


def near(reading: Decimal, truth: Decimal) -> bool:
    """Within a quarter (at least 5 points): the two clocks do not cover exactly the same time."""
    return abs(reading - truth) <= max(Decimal(5), truth / 4)


def test_cpu_is_every_process_normalised_per_granted_core(container):
    cl, url, cid, alloc = container
    busy(cl, cid)
    one, one_truth = cpu_over(cl, cid, url, alloc, 2.5)
    busy(cl, cid)
    two, two_truth = cpu_over(cl, cid, url, alloc, 2.5)
    # one busy process of a 2-core grant: at most 50 % (a core), never ~100 %;
    # two: at most 100 % of the grant, never ~200 %
    assert one <= Decimal(56) and two <= Decimal(106), (one, two)
    # what the processes themselves used, summed and divided by the GRANTED
    # cores (on a loaded machine they get less than a core each: hence the
    # comparison with their own accounting rather than with 50 and 100)
    assert near(one, one_truth), (one, one_truth)
    assert near(two, two_truth), (two, two_truth)
