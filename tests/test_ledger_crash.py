"""kill -9 of the service in the middle of its batches (core.groupcommit):
whatever it answered is in the ledger, nothing is over-committed, and the
service that starts again decides on exactly what the ledger holds.

The real service (``python -m quota_service``, keypair authentication, as
bench.admission starts it) gets a burst of concurrent requests for GPU
shares under a policy that admits ``ADMIT`` sessions, and is killed (SIGKILL)
while batches are in flight; twice. A batch is one transaction: killed
before its COMMIT, none of its requests was answered and none is in the
ledger; after it, all of them are (their answers may be lost with the
process). Then a new service fills the policy up to exactly ``ADMIT``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.admission import harness  # noqa: E402
from bench.admission.__main__ import prepare  # noqa: E402
from quota_service.core import db  # noqa: E402
from quota_service.core.models import Allocation  # noqa: E402

ADMIT = 30
BODY = {"project": "default", "resource_group": "default",
        "slots": {"cpu": "1", "mem": "1G", "gpu.shares": "0.25"}}


def burst(api: str, auth: str, n: int, kill_at: int, proc) -> dict[str, str]:
    """``n`` requests at 16 at a time; SIGKILL ``proc`` once ``kill_at`` of
    them were answered (so the kill comes while others are in flight,
    however fast the service answers). The answered ids with their state."""
    answered: dict[str, str] = {}
    lock = threading.Lock()
    local = threading.local()
    answers = [0]
    enough = threading.Event()

    def one(_):
        if not hasattr(local, "s"):
            local.s = requests.Session()
        try:
            r = local.s.post(api + "allocations", json=BODY, headers={"Authorization": auth},
                             timeout=30)
        except requests.RequestException:
            return  # killed before it answered
        with lock:
            if r.status_code in (201, 202):
                answered[r.json()["id"]] = r.json()["state"]
            answers[0] += 1
            if answers[0] >= kill_at:
                enough.set()

    def killer():
        assert enough.wait(60), "the service answered too few requests"
        os.kill(proc.pid, signal.SIGKILL)

    kill = threading.Thread(target=killer)
    kill.start()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(n)))
    kill.join()
    assert proc.wait(30) == -signal.SIGKILL  # it died of the kill, mid-burst
    return answered


def ledger(db_url: str) -> list:
    engine = db.make_engine(db_url)
    try:
        with engine.connect() as c:
            return c.execute(sa.select(Allocation.id, Allocation.state, Allocation.node_id,
                                       Allocation.gpus)).all()
    finally:
        engine.dispose()


def check(rows, answered: dict[str, str]) -> None:
    states = {r.id: r.state for r in rows}
    for alloc_id, state in answered.items():  # an answer means it committed
        assert states.get(alloc_id) == state, (alloc_id, state)
    allocated = [r for r in rows if r.state == "allocated"]
    assert len(allocated) <= ADMIT
    milli: dict = {}
    for r in allocated:
        for g in r.gpus:
            key = (r.node_id, g["index"])
            milli[key] = milli.get(key, 0) + int(Decimal(g["share"]) * 1000)
    assert all(v <= 1000 for v in milli.values()), milli


@pytest.mark.parametrize("db_url", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
def test_kill_9_mid_batch_loses_no_answer_and_overcommits_nothing(db_url):
    auth = prepare(db_url, ADMIT)  # one node of 8 GPUs; a policy of ADMIT sessions, none waiting
    answered: dict[str, str] = {}
    for kill_at in (12, 4):
        with harness.service(db_url) as svc:
            answered.update(burst(svc.api, auth, 200, kill_at, svc.proc))
        check(ledger(db_url), answered)
    with harness.service(db_url) as svc:  # the view it starts with is the ledger's
        s = requests.Session()
        codes = [s.post(svc.api + "allocations", json=BODY, headers={"Authorization": auth},
                        timeout=30).status_code for _ in range(ADMIT + 2)]
    rows = ledger(db_url)
    check(rows, answered)
    assert sum(1 for r in rows if r.state == "allocated") == ADMIT
    assert codes.count(422) >= 2 and set(codes) <= {201, 422}
