"""Following a log by position: every byte a session wrote has a number
that a truncation never changes, and a reader asks for what came after
the last byte it has.

The pure parts (the truncation line's count, whole characters at a read's
edges) with plain data and hypothesis; the store on a temporary directory;
the endpoint through the service's real app (tests/service_app.py) on
SQLite and PostgreSQL: alice owns the session, bob is another acme user.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from quota_service.sessions.logs import (
    LogStore,
    LogView,
    appended,
    marker,
    split_marker,
    utf8_end,
    utf8_start,
    whole_characters,
)
from log_fixtures import alice_session, internal_logs, logs_path  # noqa: F401
from service_app import served  # noqa: F401

CAP = 4096
ID = "0b7e2c1e-5d8c-4c39-9a55-8e1c2f9d4a10"
CHECK = "\u2713".encode()  # 3 bytes: e2 9c 93


# ---------------------------------------------------------------- positions in the file

@given(st.lists(st.binary(min_size=0, max_size=3000), max_size=12))
@settings(max_examples=150, deadline=None)
def test_the_file_keeps_the_newest_output_and_counts_what_it_dropped(chunks):
    content = b""
    for chunk in chunks:
        content, _ = appended(content, chunk, CAP)
    stream = b"".join(chunks)
    dropped, head = split_marker(content)
    assert len(content) <= CAP
    assert content[head:] == stream[dropped:]
    assert (dropped > 0) == (len(stream) > CAP)


def test_a_truncation_line_without_a_count_counts_as_nothing_dropped():
    old = b"[hubgrid: older output was dropped to keep this log within 4096 bytes]\nrest"
    assert split_marker(old) == (0, old.index(b"\n") + 1)
    assert split_marker(marker(CAP, 12345) + b"rest") == (12345, len(marker(CAP, 12345)))
    assert split_marker(b"plain output\n") == (0, 0)
    assert split_marker(b"[hubgrid: older output was dropped to keep") == (0, 0)  # no line end


# ---------------------------------------------------------------- whole characters

@pytest.mark.parametrize("data, end", [
    (b"", 0), (b"abc", 3), (b"a" + CHECK, 4), (b"a" + CHECK[:2], 1), (b"a" + CHECK[:1], 1),
    (b"\xc3", 0), (b"\xc3\xa9", 2), (b"\xf0\x9f\x98", 0), (b"\xf0\x9f\x98\x80", 4),
    (b"x\xff", 2),  # never the start of a character: nothing waits for it
    (b"\x80\x80\x80\x80", 4),  # stray continuation bytes: not a cut character
])
def test_where_the_last_whole_character_ends(data, end):
    assert utf8_end(data) == end


@pytest.mark.parametrize("data, start", [
    (b"", 0), (b"abc", 0), (CHECK[1:] + b"x", 2), (CHECK[2:] + b"x", 1), (b"\x80\x80\x80\x80x", 3),
    (b"\xff", 0),
])
def test_where_the_first_whole_character_starts(data, start):
    assert utf8_start(data) == start


def test_a_writing_session_keeps_a_cut_character_for_the_next_read():
    view = LogView(CHECK[2:] + b"ok " + CHECK[:2], 100, 107)
    assert whole_characters(view, writing=True) == LogView(b"ok ", 101, 105)
    assert whole_characters(view, writing=False) == LogView(b"ok " + CHECK[:2], 101, 107)


# ---------------------------------------------------------------- the store

@pytest.fixture
def store(tmp_path) -> LogStore:
    return LogStore(tmp_path / "logs", CAP)


def test_a_follower_reads_each_byte_once(store):
    store.append(ID, b"one\n")
    first = store.view(ID, offset=0)
    assert first == LogView(b"one\n", 0, 4)
    assert store.view(ID, offset=first.end) == LogView(b"", 4, 4)
    store.append(ID, b"two\n")
    assert store.view(ID, offset=first.end) == LogView(b"two\n", 4, 8)
    assert store.view(ID, offset=2) == LogView(b"e\ntwo\n", 2, 8)


def test_a_follower_behind_a_truncation_goes_on_from_the_oldest_byte_kept(store):
    store.append(ID, b"a" * 100)
    store.append(ID, b"b" * CAP)
    dropped, head = split_marker(store.read(ID))
    assert dropped == 100 + CAP - (CAP - head)
    behind = store.view(ID, offset=100)
    assert behind.start == dropped and behind.end == 100 + CAP
    assert behind.data == b"b" * (CAP - head)
    store.append(ID, b"c" * 10)  # rewrites the file: positions hold
    assert store.view(ID, offset=behind.end) == LogView(b"c" * 10, 100 + CAP, 110 + CAP)


def test_tail_and_whole_reads_say_where_they_end(store):
    assert store.view(ID) == LogView(b"", 0, 0)
    store.append(ID, b"x" * CAP)
    store.append(ID, b"y" * 5)
    whole = store.view(ID)
    dropped, head = split_marker(whole.data)
    assert whole.data.startswith(marker(CAP, dropped)) and (whole.start, whole.end) == (dropped, CAP + 5)
    assert store.view(ID, tail=3) == LogView(b"yyy", CAP + 2, CAP + 5)
    assert store.view(ID, tail=10 * CAP) == whole


@pytest.mark.parametrize("written, offset", [(b"", 1), (b"abc", 4), (b"abc", 10**12)])
def test_an_offset_past_the_end_is_refused(store, written, offset):
    if written:
        store.append(ID, written)
    with pytest.raises(ValueError, match=f"offset {offset} is past the end of the log "
                                         f"\\({len(written)} bytes\\)"):
        store.view(ID, offset=offset)


# ---------------------------------------------------------------- over HTTP

async def read(served, alloc_id, query, user="alice"):  # noqa: F811
    resp, text = await served.call("GET", logs_path(alloc_id, query), user)
    assert resp.code == 200, text
    return text, int(resp.headers["X-Hubgrid-Log-Start"]), int(resp.headers["X-Hubgrid-Log-End"])


async def test_a_follower_over_http_gets_each_line_once_and_whole_characters(
        served, alice_session):  # noqa: F811
    await served.call("POST", internal_logs(alice_session), "internal", body=b"ready " + CHECK[:1])
    assert await read(served, alice_session, "") == ("ready ", 0, 6)
    assert await read(served, alice_session, "?offset=6") == ("", 6, 6)  # the tick waits
    await served.call("POST", internal_logs(alice_session), "internal", body=CHECK[1:] + b"\n")
    assert await read(served, alice_session, "?offset=6") == ("\u2713\n", 6, 10)
    assert await read(served, alice_session, "?offset=10") == ("", 10, 10)
    assert await read(served, alice_session, "?tail=2") == ("\n", 9, 10)  # a cut start skipped


async def test_an_ended_session_hands_over_its_last_bytes_as_they_are(
        served, cluster, alice_session):  # noqa: F811
    await served.call("POST", internal_logs(alice_session), "internal", body=b"bye " + CHECK[:2])
    cluster.release("alice", alice_session)
    assert await read(served, alice_session, "?offset=0") == ("bye \ufffd", 0, 6)


async def test_a_follower_left_behind_by_truncation_is_told_where_the_output_resumes(
        served, alice_session):  # noqa: F811
    cap = served.svc.session_log_max_bytes
    await served.call("POST", internal_logs(alice_session), "internal", body=b"a" * cap)
    await served.call("POST", internal_logs(alice_session), "internal", body=b"z" * 10)
    text, start, end = await read(served, alice_session, "?offset=5")
    assert start > 5 and end == cap + 10 and text.endswith("a" + "z" * 10)
    assert len(text.encode()) == end - start


@pytest.mark.parametrize("query, message", [
    ("?offset=-1", "offset: must be an integer from 0 to"),
    ("?offset=x", "offset: must be an integer from 0 to"),
    ("?offset=4", "offset: offset 4 is past the end of the log (3 bytes)"),
    ("?offset=0&tail=1", "tail or offset: not both"),
])
async def test_a_bad_offset_is_a_400_that_says_why(served, alice_session, query, message):  # noqa: F811
    await served.call("POST", internal_logs(alice_session), "internal", body=b"abc")
    resp, data = await served.call("GET", logs_path(alice_session, query), "alice")
    assert resp.code == 400 and data["message"].startswith(message)


@pytest.mark.parametrize("reader", ["bob", "gina"])
async def test_an_offset_reveals_nothing_to_others(served, alice_session, reader):  # noqa: F811
    await served.call("POST", internal_logs(alice_session), "internal", body=b"secret\n")
    for query in ("?offset=0", "?offset=99"):
        resp, data = await served.call("GET", logs_path(alice_session, query), reader)
        assert resp.code == 404 and "secret" not in str(data)
        assert "X-Hubgrid-Log-End" not in resp.headers
