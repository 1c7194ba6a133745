"""Who may do what with a folder's files: ro reads, rw makes new names, and
whatever takes an existing entry away from its path (delete, move, rename,
replace) needs wd.

The rule is one function (``storage.files.required_permission``), checked here as
a table, then through the served API for every verb of the files API and of
tus, for each permission: carl (ro), dora (rw), erin (wd) and alice (the
owner).
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import urlparse

import pytest
from files_world import files, served  # noqa: F401

from quota_service.storage import files as vfiles
from quota_service.core.errors import Denied

# op, overwrite -> the least permission that may do it
RULES = [
    ("list", False, "ro"),
    ("download", False, "ro"),
    ("mkdir", False, "rw"),
    ("upload", False, "rw"),
    ("upload", True, "wd"),
    ("tus-create", False, "rw"),
    ("tus-create", True, "wd"),
    ("tus-offset", False, "rw"),
    ("tus-append", False, "rw"),
    ("tus-append", True, "wd"),
    ("tus-terminate", False, "rw"),
    ("move", False, "wd"),
    ("move", True, "wd"),
    ("delete", False, "wd"),
]
ORDER = ("ro", "rw", "wd")
USERS = {"carl": "ro", "dora": "rw", "erin": "wd", "alice": "wd"}  # alice owns the folder


def test_the_rules_cover_every_operation():
    assert {op for op, _, _ in RULES} == set(vfiles.OPERATIONS)
    assert {op for op, overwrite, _ in RULES if overwrite} == vfiles.REPLACING


@pytest.mark.parametrize("op, overwrite, least", RULES)
@pytest.mark.parametrize("perm", ORDER)
def test_each_operation_needs_its_permission(op, overwrite, least, perm):
    assert vfiles.required_permission(op, overwrite) == least
    if ORDER.index(perm) >= ORDER.index(least):
        vfiles.require(perm, op, overwrite, "data")
    else:
        with pytest.raises(Denied) as e:
            vfiles.require(perm, op, overwrite, "data")
        assert f"is {perm}:" in e.value.message and f"needs {least}" in e.value.message


def test_an_operation_that_never_overwrites_refuses_the_flag():
    with pytest.raises(ValueError):
        vfiles.required_permission("delete", overwrite=True)
    with pytest.raises(ValueError):
        vfiles.required_permission("chmod")


# --- the attack: a link planted in a folder ---------------------------------------

async def test_an_rw_invitee_cannot_hide_and_replace_the_owners_file(files):
    original = os.urandom(4096)
    r, _ = await files.upload("victim.txt", original)
    assert r.code == 201
    used = files.used()

    r, _ = await files.call("POST", "mkdir", "dora", json_body={"path": "hide"})
    assert r.code == 201  # rw makes new names
    r, body = await files.call("POST", "move", "dora",
                               json_body={"src": "victim.txt", "dst": "hide/victim.txt"})
    assert r.code == 403 and body["reason"] == "forbidden"
    assert "move needs wd" in body["message"], body
    r, body = await files.upload("victim.txt", b"replaced", "dora")
    assert r.code == 409, body
    r, body = await files.upload("victim.txt", b"replaced", "dora", overwrite=True)
    assert r.code == 403 and "needs wd" in body["message"]
    # a move alone would take it away from its path
    r, _ = await files.call("POST", "move", "dora",
                            json_body={"src": "victim.txt", "dst": "renamed.txt"})
    assert r.code == 403
    r = await files.tus_create("victim.txt", 8, "dora")
    assert r.code == 409
    r = await files.tus_create("victim.txt", 8, "dora", overwrite=True)
    assert r.code == 403

    assert (files.root / "victim.txt").read_bytes() == original
    assert files.tree() == {"victim.txt": original, "hide": "dir"}
    assert files.used() == used and files.in_flight() == 0
    assert os.listdir(files.staging) == []


async def test_rw_cannot_move_even_a_file_it_made(files):
    r, _ = await files.upload("mine.txt", b"dora's", "dora")
    assert r.code == 201
    r, body = await files.call("POST", "move", "dora",
                               json_body={"src": "mine.txt", "dst": "yours.txt"})
    assert r.code == 403 and "wd" in body["message"]
    r, _ = await files.call("DELETE", "files?path=mine.txt", "dora")
    assert r.code == 403
    assert files.tree() == {"mine.txt": b"dora's"}


# --- every verb, every permission ---------------------------------------------------

async def tus_upload_of(files, user: str, path: str, perm: str, overwrite=False) -> str:
    """An upload of ``user``'s into the folder, made while they held wd; the
    user's permission is ``perm`` afterwards. Returns the upload's tail."""
    if user != "alice":
        files.set_share(user, "wd")
    r = await files.tus_create(path, 4, user, overwrite)
    assert r.code == 201, r.body
    if user != "alice":
        files.set_share(user, perm)
    return urlparse(r.headers["Location"]).path.split(files.url(""), 1)[1]


async def do_list(files, user, tag):
    return (await files.call("GET", "files", user))[0]


async def do_download(files, user, tag):
    return await files.fetch("download?path=f.txt", user)


async def do_mkdir(files, user, tag):
    return (await files.call("POST", "mkdir", user, json_body={"path": f"d-{tag}"}))[0]


async def do_upload(files, user, tag):
    return (await files.upload(f"new-{tag}.txt", b"new", user))[0]


async def do_upload_overwrite(files, user, tag):
    return (await files.upload("f.txt", b"replaced", user, overwrite=True))[0]


async def do_move(files, user, tag):
    return (await files.call("POST", "move", user,
                             json_body={"src": "f.txt", "dst": f"moved-{tag}.txt"}))[0]


async def do_move_overwrite(files, user, tag):
    return (await files.call("POST", "move", user, json_body={
        "src": "f.txt", "dst": "g.txt", "overwrite": True}))[0]


async def do_delete(files, user, tag):
    return (await files.call("DELETE", "files?path=f.txt", user))[0]


async def do_tus_create(files, user, tag):
    return await files.tus_create(f"tus-{tag}.bin", 4, user)


async def do_tus_create_overwrite(files, user, tag):
    return await files.tus_create("f.txt", 4, user, overwrite=True)


async def do_tus_offset(files, user, tag):
    tail = await tus_upload_of(files, user, f"t-{tag}.bin", USERS[user])
    return await files.tus("HEAD", tail, user)


def _append(overwrite):
    async def run(files, user, tag):
        path = "f.txt" if overwrite else f"t-{tag}.bin"
        tail = await tus_upload_of(files, user, path, USERS[user], overwrite)
        return await files.tus("PATCH", tail, user, {
            "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0"},
            b"tus!")
    return run


async def do_tus_terminate(files, user, tag):
    tail = await tus_upload_of(files, user, f"t-{tag}.bin", USERS[user])
    return await files.tus("DELETE", tail, user)


VERBS = [
    ("list", False, do_list),
    ("download", False, do_download),
    ("mkdir", False, do_mkdir),
    ("upload", False, do_upload),
    ("upload", True, do_upload_overwrite),
    ("move", False, do_move),
    ("move", True, do_move_overwrite),
    ("delete", False, do_delete),
    ("tus-create", False, do_tus_create),
    ("tus-create", True, do_tus_create_overwrite),
    ("tus-offset", False, do_tus_offset),
    ("tus-append", False, _append(False)),
    ("tus-append", True, _append(True)),
    ("tus-terminate", False, do_tus_terminate),
]


def test_every_rule_has_a_verb():
    assert {(op, overwrite) for op, overwrite, _ in VERBS} == \
        {(op, overwrite) for op, overwrite, _ in RULES}


@pytest.mark.parametrize("op, overwrite, run", VERBS,
                         ids=[f"{op}{'+overwrite' if o else ''}" for op, o, _ in VERBS])
async def test_each_verb_through_the_api(files, op, overwrite, run):
    least = vfiles.required_permission(op, overwrite)
    for user, perm in USERS.items():
        # a fresh f.txt (and g.txt to replace) of alice's for each caller
        for name in ("f.txt", "g.txt"):
            r, _ = await files.upload(name, f"{name} of alice".encode(), overwrite=True)
            assert r.code == 201
        before = files.tree()
        r = await run(files, user, user)
        allowed = ORDER.index(perm) >= ORDER.index(least)
        if allowed:
            assert 200 <= r.code < 300, (op, user, r.code, r.body)
            continue
        assert r.code == 403, (op, user, r.code, r.body)
        if r.request.method != "HEAD":  # HEAD answers carry no body
            body = json.loads(r.body)
            need = re.search(r"needs (ro|rw|wd)", body["message"])
            assert body["reason"] == "forbidden" and need, body
            assert ORDER.index(perm) < ORDER.index(need.group(1)) <= ORDER.index(least), body
        assert files.tree() == before, (op, user)
