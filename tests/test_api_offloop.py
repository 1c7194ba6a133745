"""What moving the handlers' database work off the event loop must keep.

The handlers run every transaction in a worker thread (``APIHandler.db``;
``tests/test_openapi.py`` checks that no SQL runs on the loop's thread).
Two things held only because that work used to run on the loop:

- an upload's quota: a completed upload gives its reserved bytes back
  before its usage write has committed, so a reservation in between would
  count them zero times (``api.uploadbook.UsageGate`` orders the two);
- the access log: a caller who reads it right after an answer finds the
  entry (it is now written before the answer goes).

The waits below are on events the code under test sets; nothing is timed.
"""

from __future__ import annotations

import asyncio
import threading

import sqlalchemy as sa
from files_world import files, served  # noqa: F401

from quota_service.api.files import FolderFilesHandler
from quota_service.api.uploadbook import UsageGate
from quota_service.core.models import AuditEntry
from quota_service.tenancy import audit


# --- the usage gate ----------------------------------------------------------------

async def test_a_read_a_completion_overlapped_is_made_again():
    gate, reads = UsageGate(), []

    async def read():
        reads.append(len(reads))
        if len(reads) == 1:  # a completion lands while this read is under way
            gate.recording()
            gate.recorded()
        return len(reads)

    assert await gate.read(read) == 2
    assert reads == [0, 1]


async def test_a_read_waits_while_a_completion_is_recording():
    gate, reads = UsageGate(), []

    async def read():
        reads.append("read")
        return "used"

    gate.recording()
    waiting = asyncio.ensure_future(gate.read(read))
    for _ in range(5):
        await asyncio.sleep(0)
    assert reads == [] and not waiting.done()
    gate.recorded()
    assert await waiting == "used" and reads == ["read"]


async def test_an_idle_gate_reads_once():
    gate = UsageGate()

    async def read():
        return 7

    assert await gate.read(read) == 7


# --- through the files API ---------------------------------------------------------

async def test_an_upload_after_one_that_just_landed_counts_its_bytes(files, monkeypatch):
    """The first upload's file landed and its reservation went, its usage
    write has not happened yet: the second upload is judged only once it has."""
    files.driver.set_policy("default", max_vfolder_size=100)
    written, go, second_at_gate = asyncio.Event(), asyncio.Event(), asyncio.Event()
    usage_changed, folder_to_fill = (FolderFilesHandler.usage_changed,
                                     FolderFilesHandler.folder_to_fill)
    fills = []

    async def held_usage_changed(self, folder_id, delta):
        if delta > 0 and not go.is_set():
            written.set()
            await go.wait()
        await usage_changed(self, folder_id, delta)

    async def probed_folder_to_fill(self, *args, **kwargs):
        fills.append(args)
        if len(fills) == 2:
            second_at_gate.set()
        return await folder_to_fill(self, *args, **kwargs)

    monkeypatch.setattr(FolderFilesHandler, "usage_changed", held_usage_changed)
    monkeypatch.setattr(FolderFilesHandler, "folder_to_fill", probed_folder_to_fill)

    first = asyncio.ensure_future(files.upload("first.bin", b"1" * 60))
    try:
        await written.wait()
        # the moment the gate is for: the 60 bytes are neither in flight nor used
        assert files.in_flight() == 0 and files.used() == 0
        second = asyncio.ensure_future(files.upload("second.bin", b"2" * 50))
        await second_at_gate.wait()
    finally:
        go.set()
    (r1, b1), (r2, b2) = await first, await second
    assert r1.code == 201, b1
    assert r2.code == 413 and b2["reason"] == "quota-exceeded"
    assert b2["message"] == "vfolder quota: used 60 + in flight 0 + upload 50 > limit 100 bytes"
    assert files.used() == 60 and files.in_flight() == 0
    assert not (files.root / "second.bin").exists()


# --- the access log ------------------------------------------------------------------

async def test_the_access_log_entry_is_written_before_the_answer_goes(served, monkeypatch):
    loop = asyncio.get_running_loop()
    writing, go = asyncio.Event(), threading.Event()
    add = audit.add  # the access log's writes go in batches (core.groupcommit)

    def held_add(s, rec, now):
        loop.call_soon_threadsafe(writing.set)
        go.wait()
        add(s, rec, now)

    monkeypatch.setattr(audit, "add", held_add)
    answer = asyncio.ensure_future(served.call("POST", "domains", "root",
                                               json_body={"name": "offloop"}))
    try:
        await writing.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not answer.done()  # the loop is free, the answer waits for the entry
    finally:
        go.set()
    resp, body = await answer
    assert resp.code == 201, body
    with served.world.tx() as s:
        entry = s.scalar(sa.select(AuditEntry).where(AuditEntry.target == "offloop"))
    assert (entry.action, entry.outcome, entry.status, entry.actor) == (
        "domain.create", "success", 201, "root")
