"""The ``hubgrid`` command (labextension/jupyterlab_hubgrid/cli) against the
real service (tests/service_app.py), called with keypairs as a user outside
a session would: every command's happy path and its refusal, ``--json``
that parses, exact amounts, one-line errors and the exit codes (1 refused
by the service, 2 usage, 3 unreachable). Starting and stopping sessions goes
through JupyterHub: those run against the real hub in tests/test_cli_hub.py.

The world (conftest ``tenancy`` + ``cluster``): alice in acme/ml, bob in
acme (joined to ml where a test needs it), ada the domain admin of acme,
gina in globex/lab; a resource group ``gpu`` with one node of two GPUs.
The command runs in a worker thread (the service runs on the test's loop),
with its own streams and environment.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from jupyterlab_hubgrid.cli import main
from jupyterlab_hubgrid.cli.output import duration, safe, safe_log
from service_app import served  # noqa: E402,F401

D = Decimal


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """SQLite only: the command's behaviour does not depend on the service's
    database (the service's own tests run both)."""
    return sqlite_db_url


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out, parse_float=Decimal)

    def rows(self) -> list[list[str]]:
        """A table's lines split into cells (two or more spaces apart)."""
        import re

        return [re.split(r"\s{2,}", line.strip()) for line in self.out.splitlines()
                if line.strip() and not set(line.strip()) <= {"-", " "}]


class Hubgrid:
    """Runs ``hubgrid ARGS`` as a user (a keypair of theirs) against ``served``."""

    def __init__(self, served):  # noqa: F811
        self.served = served

    def env(self, user: str) -> dict[str, str]:
        access, secret = self.served.auth(user).removeprefix("Keypair ").split(":", 1)
        return {"HUBGRID_API_URL": self.served.api, "HUBGRID_ACCESS_KEY": access,
                "HUBGRID_SECRET_KEY": secret}

    async def __call__(self, user: str | None, *argv: str, env: dict | None = None,
                       out: io.StringIO | None = None) -> Result:
        env = self.env(user) if env is None else env
        out, err = out or io.StringIO(), io.StringIO()
        code = await asyncio.to_thread(main, list(argv), env=env, stdout=out, stderr=err)
        return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def hubgrid(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"n1": ("A100", "A100")}, cpu="8", mem="32G")
    cluster.set_project("acme", "ml", slots={"cpu": "4", "gpu.shares": "1"})
    cluster.set_domain("acme", slots={"gpu.shares": "2"})
    cluster.set_policy("default", total_resource_slots={"cpu": "6", "mem": "0"})
    run = Hubgrid(served)
    run.cluster = cluster
    return run


async def allocate(hubgrid, user: str, project: str = "ml", **slots) -> dict:
    resp, body = await hubgrid.served.call("POST", "allocations", user, json_body={
        "project": project, "resource_group": "gpu", "slots": slots})
    assert resp.code in (201, 202), body
    return body


def one_line_error(r: Result) -> str:
    assert r.out == "" and r.err.endswith("\n") and r.err.count("\n") == 1, r
    return r.err


# --- me and quota ---------------------------------------------------------------------------

async def test_me_says_who_i_am(hubgrid):
    r = await hubgrid("alice", "me")
    assert r.code == 0, r.err
    rows = dict((row[0], row[1]) for row in r.rows())
    assert rows["user"] == "alice" and rows["role"] == "user"
    assert rows["domain"] == "acme (limits: gpu.shares 2)"
    assert rows["projects"] == "ml (limits: cpu 4, gpu.shares 1)"
    assert rows["signed in with"] == "keypair"
    j = await hubgrid("alice", "me", "--json")
    assert j.code == 0 and j.json()["name"] == "alice" and j.json()["credential"] == "keypair"
    # --json before the command works too
    assert (await hubgrid("alice", "--json", "me")).json() == j.json()


async def test_quota_shows_three_shares_of_point_three_as_point_nine_at_every_level(hubgrid):
    for _ in range(3):
        await allocate(hubgrid, "alice", cpu="1", **{"gpu.shares": "0.3"})
    r = await hubgrid("alice", "quota", "--json")
    assert r.code == 0, r.err
    levels = {lv["level"]: lv for lv in r.json()["levels"]}
    by_slot = {lv: {s["slot"]: s for s in levels[lv]["slots"]} for lv in levels}
    assert by_slot["project"]["gpu.shares"] == {"slot": "gpu.shares", "limit": "1",
                                                "used": "0.9", "free": "0.1", "pending": "0"}
    assert by_slot["domain"]["gpu.shares"]["free"] == "1.1"
    assert by_slot["user"]["cpu"] == {"slot": "cpu", "limit": "6", "used": "3", "free": "3",
                                      "pending": "0"}
    # a limit of 0 with nothing used stays visible
    assert by_slot["user"]["mem"] == {"slot": "mem", "limit": "0", "used": "0", "free": "0",
                                      "pending": "0"}
    assert levels["user"]["source"] == "resource policy default"
    assert levels["user"]["sessions"] == {"limit": None, "used": 3, "pending": 0}

    table = await hubgrid("alice", "quota")
    rows = table.rows()
    assert rows[0] == ["LEVEL", "NAME", "SLOT", "LIMIT", "USED", "FREE", "PENDING"]
    assert ["user", "alice", "cpu", "6", "3", "3", "0"] in rows
    assert ["mem", "0 B", "0 B", "0 B", "0 B"] in rows
    assert ["project", "ml *", "cpu", "4", "3", "1", "0"] in rows
    assert ["gpu.shares", "1", "0.9", "0.1", "0"] in rows
    assert ["gpu.shares", "2", "0.9", "1.1", "0"] in rows
    assert "* project ml, domain acme: USED and PENDING count only your own sessions" \
        in table.out


async def test_quota_of_a_user_counts_their_own_use_an_admins_counts_everybodys(hubgrid):
    hubgrid.cluster.join("bob", "acme", "ml")
    await allocate(hubgrid, "alice", cpu="1", **{"gpu.shares": "0.5"})
    await allocate(hubgrid, "bob", cpu="1", **{"gpu.shares": "0.25"})
    alice = {lv["level"]: lv for lv in (await hubgrid("alice", "quota", "--json")).json()["levels"]}
    shares = {s["slot"]: s for s in alice["domain"]["slots"]}["gpu.shares"]
    assert (shares["used"], alice["domain"]["complete"]) == ("0.5", False)
    ada = {lv["level"]: lv for lv in (await hubgrid("ada", "quota", "--json")).json()["levels"]}
    shares = {s["slot"]: s for s in ada["domain"]["slots"]}["gpu.shares"]
    assert (shares["used"], ada["domain"]["complete"]) == ("0.75", True)


async def test_quota_shows_the_storage_limits(hubgrid):
    hubgrid.cluster.set_policy("default", max_vfolder_count=2, max_vfolder_size=1 << 30)
    assert (await hubgrid("alice", "folders", "create", "data")).code == 0
    r = await hubgrid("alice", "quota")
    assert ["user", "alice", "1", "2", "0 B", "1 GiB"] in r.rows()
    assert ["project", "ml", "0", "unlimited", "0 B", "unlimited"] in r.rows()


# --- sessions ---------------------------------------------------------------------------------

async def test_sessions_ls_shows_my_sessions_and_nobody_elses(hubgrid):
    hubgrid.cluster.join("bob", "acme", "ml")
    mine = [await allocate(hubgrid, "alice", cpu="1", **{"gpu.shares": "0.3"}) for _ in range(2)]
    bobs = await allocate(hubgrid, "bob", cpu="1")
    r = await hubgrid("alice", "sessions", "ls")
    assert r.code == 0, r.err
    header, *rows = r.rows()
    assert header[:4] == ["ID", "NAME", "STATE", "PROJECT"]
    assert sorted(row[0] for row in rows) == sorted(a["id"][:8] for a in mine)
    assert rows[0][1:10] == ["(default)", "running", "ml", "gpu", "interactive", "-", "1",
                             "0 B", "0.3 (share)"]
    j = await hubgrid("alice", "sessions", "ls", "--json")
    assert {a["id"] for a in j.json()} == {a["id"] for a in mine}
    # the group alone lists them too, as ls does
    alone = await hubgrid("alice", "sessions")
    assert (alone.code, alone.out) == (0, r.out), alone.err
    assert (await hubgrid("alice", "sessions", "--json")).json() == j.json()
    # another user's sessions: the service shows a user only their own
    other = await hubgrid("alice", "sessions", "ls", "--user", "bob", "--json")
    assert other.code == 0 and other.json() == []
    assert (await hubgrid("alice", "sessions", "ls", "--user", "bob")).out.startswith("no sessions")
    # their domain admin sees them
    ada = await hubgrid("ada", "sessions", "ls", "--user", "bob", "--json")
    assert [a["id"] for a in ada.json()] == [bobs["id"]]


async def test_a_pending_session_shows_the_schedulers_reason_with_its_numbers(hubgrid):
    await allocate(hubgrid, "alice", cpu="3")
    waiting = await allocate(hubgrid, "alice", cpu="3")
    assert waiting["state"] == "pending"
    r = await hubgrid("alice", "sessions", "ls")
    row = next(row for row in r.rows() if row[0] == waiting["id"][:8])
    assert row[2] == "waiting"  # the Lab's word (jupyterlab_hubgrid/words.py)
    assert row[-1] == "project ml cpu: used 3 + requested 3 > limit 4 (over by 2)"
    shown = await hubgrid("alice", "sessions", "show", waiting["id"][:8])
    assert "waits: project ml cpu: used 3 + requested 3 > limit 4 (over by 2)" in shown.out
    pending = await hubgrid("alice", "sessions", "ls", "--state", "pending", "--json")
    assert [a["id"] for a in pending.json()] == [waiting["id"]]


async def test_dry_run_says_it_fits_now_and_where(hubgrid):
    r = await hubgrid("alice", "sessions", "dry-run", "-g", "gpu", "--gpu-shares", "0.5",
                      "--mem", "0")
    assert (r.code, r.out) == (0, "fits now: node n1, GPU 0 (0.5)\n"), r.err
    j = await hubgrid("alice", "sessions", "dry-run", "-g", "gpu", "--gpu-shares", "0.5",
                      "--mem", "0", "--json")
    assert j.json()["fits_now"] is True
    assert [{k: g[k] for k in ("index", "share")} for g in j.json()["gpus"]] == [
        {"index": 0, "share": "0.5"}]


async def test_dry_run_that_would_wait_says_why_and_exits_1(hubgrid):
    for _ in range(3):
        await allocate(hubgrid, "alice", cpu="1", **{"gpu.shares": "0.3"})
    r = await hubgrid("alice", "sessions", "dry-run", "-p", "ml", "-g", "gpu", "--gpu-shares",
                      "0.3", "--mem", "0")
    assert r.code == 1
    assert r.out == ("would wait in the queue:\n  project ml gpu.shares: used 0.9 + requested "
                     "0.3 > limit 1 (over by 0.2)\n")
    j = await hubgrid("alice", "sessions", "dry-run", "-g", "gpu", "--gpu-shares", "0.3",
                      "--mem", "0", "--json")
    assert j.code == 1 and j.json()["verdict"] == "pending"
    assert j.json()["reasons"][0]["used"] == "0.9"


async def test_dry_run_that_can_never_fit_is_refused_with_the_reason(hubgrid):
    r = await hubgrid("alice", "sessions", "dry-run", "-g", "gpu", "--cpu", "5", "--mem", "0")
    assert r.code == 1
    assert r.out == ("would be refused:\n"
                     "  project ml cpu: used 0 + requested 5 > limit 4 (over by 1)\n")
    # the default memory (2G, as the spawn form's) is over the policy's 0
    dflt = await hubgrid("alice", "sessions", "dry-run", "-g", "gpu")
    assert dflt.code == 1 and dflt.out.splitlines()[1] == (
        "  user alice mem: used 0 B + requested 2 GiB > limit 0 B (over by 2 GiB)")


async def test_a_bad_project_is_refused_with_the_services_message(hubgrid):
    r = await hubgrid("alice", "sessions", "dry-run", "-p", "nope", "-g", "gpu")
    assert r.code == 1
    assert one_line_error(r) == "hubgrid: project acme/nope not found (HTTP 404)\n"
    bad = await hubgrid("alice", "sessions", "dry-run", "-g", "gpu", "--cpu", "lots")
    assert bad.code == 1 and "cpu" in one_line_error(bad) and "(HTTP 422)" in bad.err


async def test_stop_releases_my_session_made_through_the_api(hubgrid):
    a = await allocate(hubgrid, "alice", cpu="1")
    r = await hubgrid("alice", "sessions", "stop", a["id"][:8])
    assert (r.code, r.out) == (0, f"session (default) ({a['id'][:8]}): ended\n"), r.err
    assert (await hubgrid("alice", "sessions", "ls", "--json")).json() == []
    ended = await hubgrid("alice", "sessions", "ls", "--all", "--json")
    assert [(x["id"], x["state"]) for x in ended.json()] == [(a["id"], "released")]
    # nothing active by that id any more: a usage error, nothing sent
    again = await hubgrid("alice", "sessions", "stop", a["id"][:8])
    assert again.code == 2 and "no active session" in one_line_error(again)


async def test_stopping_somebody_elses_session_is_refused(hubgrid):
    hubgrid.cluster.join("bob", "acme", "ml")
    bobs = await allocate(hubgrid, "bob", cpu="1")
    r = await hubgrid("alice", "sessions", "stop", bobs["id"])
    assert r.code == 1 and "not found (HTTP 404)" in one_line_error(r)
    assert (await hubgrid("bob", "sessions", "ls", "--json")).json()[0]["state"] == "allocated"


async def test_start_without_a_hub_token_says_what_to_set(hubgrid):
    r = await hubgrid("alice", "sessions", "start", "train", "-g", "gpu")
    assert r.code == 2 and "JUPYTERHUB_API_TOKEN" in one_line_error(r)
    bad = await hubgrid("alice", "sessions", "start", "Bad Name")
    assert bad.code == 2 and "session name 'Bad Name'" in one_line_error(bad)


# --- logs -------------------------------------------------------------------------------------

async def write_log(hubgrid, alloc_id: str, data: bytes) -> None:
    resp, body = await hubgrid.served.call("POST", f"internal/allocations/{alloc_id}/logs",
                                           "internal", body=data)
    assert resp.code == 200, body


async def test_logs_of_a_session_without_output_say_so_instead_of_printing_nothing(hubgrid):
    a = await allocate(hubgrid, "alice", cpu="1")
    r = await hubgrid("alice", "sessions", "logs", a["id"][:8])
    assert (r.code, r.out, r.err) == (0, "", f"hubgrid: no output from session {a['id'][:8]} yet\n")
    await write_log(hubgrid, a["id"], b"hello\n")
    r = await hubgrid("alice", "sessions", "logs", a["id"][:8])
    assert (r.code, r.out, r.err) == (0, "hello\n", "")


async def test_logs_print_the_output_with_control_characters_made_visible(hubgrid):
    a = await allocate(hubgrid, "alice", cpu="1")
    await write_log(hubgrid, a["id"], b"step 1\r\nstep 2\n\x1b[2J\x1b]0;pwned\x07done\n")
    r = await hubgrid("alice", "sessions", "logs", a["id"][:8])
    assert r.code == 0, r.err
    assert r.out == "step 1\nstep 2\n\\x1b[2J\\x1b]0;pwned\\x07done\n"
    raw = await hubgrid("alice", "sessions", "logs", a["id"][:8], "--raw")
    assert raw.out == "step 1\r\nstep 2\n\x1b[2J\x1b]0;pwned\x07done\n"
    tail = await hubgrid("alice", "sessions", "logs", a["id"], "--tail", "5")
    assert tail.out == "done\n"
    other = await hubgrid("bob", "sessions", "logs", a["id"])
    assert other.code == 1 and "not found" in one_line_error(other)
    assert (await hubgrid("alice", "sessions", "logs", a["id"], "--tail", "0")).code == 2


async def test_logs_follow_prints_new_output_until_the_session_ends(hubgrid):
    a = await allocate(hubgrid, "alice", cpu="1")
    await write_log(hubgrid, a["id"], b"first\n")
    out = io.StringIO()
    follow = asyncio.create_task(hubgrid("alice", "sessions", "logs", a["id"][:8], "-f",
                                         "--interval", "0.05", out=out))
    for _ in range(400):  # until the first line is out (bounded)
        if "first" in out.getvalue() or follow.done():
            break
        await asyncio.sleep(0.05)
    assert out.getvalue() == "first\n"
    await write_log(hubgrid, a["id"], b"second\n")
    for _ in range(400):
        if "second" in out.getvalue() or follow.done():
            break
        await asyncio.sleep(0.05)
    await write_log(hubgrid, a["id"], b"last words\n")
    resp, _ = await hubgrid.served.call("DELETE", f"allocations/{a['id']}", "alice")
    assert resp.code == 204
    r = await asyncio.wait_for(follow, 60)
    assert r.code == 0
    assert r.out == "first\nsecond\nlast words\n"
    assert r.err == "hubgrid: session ended: stopped by alice\n"


async def test_logs_follow_says_where_the_service_dropped_output_it_never_printed(hubgrid):
    a = await allocate(hubgrid, "alice", cpu="1")
    cap = hubgrid.served.svc.session_log_max_bytes
    await write_log(hubgrid, a["id"], b"first\n")
    out = io.StringIO()
    follow = asyncio.create_task(hubgrid("alice", "sessions", "logs", a["id"][:8], "-f",
                                         "--interval", "0.05", out=out))
    for _ in range(400):
        if "first" in out.getvalue() or follow.done():
            break
        await asyncio.sleep(0.05)
    await write_log(hubgrid, a["id"], b"x" * cap + b"\nnewest\n")  # more than the log keeps
    resp, _ = await hubgrid.served.call("DELETE", f"allocations/{a['id']}", "alice")
    assert resp.code == 204
    r = await asyncio.wait_for(follow, 60)
    kept = hubgrid.served.svc.log_store.read(a["id"]).partition(b"\n")[2]
    assert r.code == 0 and r.out == "first\n" + kept.decode()
    assert r.out.endswith("x\nnewest\n") and r.out.count("first") == 1
    dropped = 6 + cap + 8 - len(kept)
    assert r.err == (f"hubgrid: {dropped - 6} bytes of output were dropped here (the service "
                     "keeps the newest part of a long log)\n"
                     "hubgrid: session ended: stopped by alice\n")


# --- folders ----------------------------------------------------------------------------------

async def test_folders_create_ls_upload_files_download(hubgrid, tmp_path):
    r = await hubgrid("alice", "folders", "create", "data", "--json")
    assert r.code == 0, r.err
    folder = r.json()
    assert folder["name"] == "data" and folder["permission"] == "wd"
    dup = await hubgrid("alice", "folders", "create", "data")
    assert dup.code == 1 and "(HTTP 409)" in one_line_error(dup)

    local = tmp_path / "train.csv"
    local.write_bytes(b"a,b\n1,2\n" * 1000)
    up = await hubgrid("alice", "folders", "upload", "data", str(local), "in/")
    assert up.code == 1 and "(HTTP 404)" in one_line_error(up)  # no directory "in" yet
    up = await hubgrid("alice", "folders", "upload", "data", str(local))
    assert (up.code, up.out) == (0, "uploaded train.csv (≈ 7.81 KiB) to data:train.csv\n"), up.err
    again = await hubgrid("alice", "folders", "upload", "data", str(local))
    assert again.code == 1 and "(HTTP 409)" in one_line_error(again)
    assert (await hubgrid("alice", "folders", "upload", "data", str(local),
                          "--overwrite")).code == 0

    ls = await hubgrid("alice", "folders", "ls")
    header, row, legend = ls.rows()
    # the permissions are explained under the table (wd: write-delete)
    assert legend[0].startswith("PERMISSION: ro read only; rw read and add files (no delete); "
                                "wd write-delete: also delete"), legend
    assert (await hubgrid("alice", "folders")).out == ls.out  # the group alone lists them
    assert header[:6] == ["NAME", "ID", "OWNER", "HOST", "TYPE", "PERMISSION"]
    assert row[:6] == ["data", folder["id"][:8], "user alice", "local", "general", "wd"]
    assert row[-2:] == ["active", "on request"]
    files = await hubgrid("alice", "folders", "files", folder["id"][:8])
    assert files.rows()[1][:3] == ["train.csv", "file", "≈ 7.81 KiB"]

    target = tmp_path / "back.csv"
    down = await hubgrid("alice", "folders", "download", "data", "train.csv", str(target))
    assert down.code == 0, down.err
    assert target.read_bytes() == local.read_bytes()
    exists = await hubgrid("alice", "folders", "download", "data", "train.csv", str(target))
    assert exists.code == 2 and "--force" in one_line_error(exists)
    missing = await hubgrid("alice", "folders", "download", "data", "nope.csv",
                            str(tmp_path / "nope.csv"))
    assert missing.code == 1 and "(HTTP 404)" in one_line_error(missing)
    assert not (tmp_path / "nope.csv").exists() and not (tmp_path / "nope.csv.part").exists()
    gone = await hubgrid("alice", "folders", "upload", "data", str(tmp_path / "absent"))
    assert gone.code == 2 and "not a readable file" in one_line_error(gone)


async def test_a_folder_of_somebody_else_is_not_mine_to_see(hubgrid):
    await hubgrid("alice", "folders", "create", "private")
    r = await hubgrid("bob", "folders", "ls", "--json")
    assert r.code == 0 and r.json() == []
    up = await hubgrid("bob", "folders", "files", "private")
    assert up.code == 2 and "no folder of yours" in one_line_error(up)


async def test_share_accept_decline_and_cancel_invitations(hubgrid, tmp_path):
    data = (await hubgrid("alice", "folders", "create", "data", "--json")).json()
    other = (await hubgrid("alice", "folders", "create", "other", "--json")).json()
    shared = await hubgrid("alice", "folders", "share", "data", "bob")
    assert shared.code == 0 and shared.out.startswith("invited bob to data (ro): invitation ")
    foreign = await hubgrid("alice", "folders", "share", "data", "gina")
    assert foreign.code == 1 and "(HTTP" in one_line_error(foreign)

    waiting = await hubgrid("bob", "folders", "invitations")
    header, row = waiting.rows()
    assert header == ["ID", "FOLDER", "OWNER", "FROM", "PERMISSION", "STATE", "SENT AT"]
    assert row[1:6] == ["data", "user alice", "alice", "ro", "pending"]
    # only the invitee answers
    by_owner = await hubgrid("alice", "folders", "invitations", "accept", row[0])
    assert by_owner.code == 2 and "no invitation" in one_line_error(by_owner)
    ok = await hubgrid("bob", "folders", "invitations", "accept", row[0])
    assert (ok.code, ok.out) == (0, "accepted the invitation to data (ro)\n"), ok.err
    mine = (await hubgrid("bob", "folders", "ls", "--json")).json()
    assert [(f["id"], f["permission"]) for f in mine] == [(data["id"], "ro")]
    # ro: bob may not write into it
    local = tmp_path / "x.txt"
    local.write_text("x")
    refused = await hubgrid("bob", "folders", "upload", "data", str(local))
    assert refused.code == 1 and "(HTTP 403)" in one_line_error(refused)

    await hubgrid("alice", "folders", "share", other["id"], "bob", "--permission", "rw")
    inv = (await hubgrid("bob", "folders", "invitations", "ls", "--json")).json()
    assert [(i["folder"], i["permission"]) for i in inv] == [(other["id"], "rw")]
    no = await hubgrid("bob", "folders", "invitations", "decline", inv[0]["id"][:8])
    assert (no.code, no.out) == (0, "declined the invitation to other (rw)\n"), no.err
    answered = (await hubgrid("bob", "folders", "invitations", "--all", "--json")).json()
    assert sorted(i["state"] for i in answered) == ["accepted", "rejected"]

    await hubgrid("alice", "folders", "share", "other", "bob")
    sent = (await hubgrid("alice", "folders", "invitations", "ls", "--sent", "--json")).json()
    assert [i["invitee"] for i in sent] == ["bob"]
    back = await hubgrid("alice", "folders", "invitations", "cancel", sent[0]["id"])
    assert back.code == 0, back.err
    assert (await hubgrid("bob", "folders", "invitations", "--json")).json() == []


async def test_a_name_several_folders_share_asks_for_the_id(hubgrid):
    await hubgrid("alice", "folders", "create", "data")
    await hubgrid("bob", "folders", "create", "data")
    bobs = (await hubgrid("bob", "folders", "ls", "--json")).json()[0]
    await hubgrid("bob", "folders", "share", "data", "alice")
    inv = (await hubgrid("alice", "folders", "invitations", "--json")).json()[0]
    await hubgrid("alice", "folders", "invitations", "accept", inv["id"])
    r = await hubgrid("alice", "folders", "files", "data")
    assert r.code == 2 and "several folders are named 'data'" in one_line_error(r)
    assert (await hubgrid("alice", "folders", "files", bobs["id"])).code == 0


async def test_a_folder_name_with_markup_is_printed_as_text(hubgrid):
    r = await hubgrid("alice", "folders", "create", "<script>alert(1)<script>")
    assert r.code == 0, r.err
    ls = await hubgrid("alice", "folders", "ls")
    assert ls.rows()[1][0] == "<script>alert(1)<script>"


# --- errors and exit codes --------------------------------------------------------------------

async def test_an_unreachable_service_exits_3(hubgrid):
    from bench.hubproc import free_port

    env = {**hubgrid.env("alice"),
           "HUBGRID_API_URL": f"http://127.0.0.1:{free_port()}/services/hubgrid/api/v1"}
    r = await hubgrid("alice", "me", env=env)
    assert r.code == 3 and "cannot reach the hubgrid service" in one_line_error(r)


async def test_missing_configuration_is_a_usage_error(hubgrid):
    r = await hubgrid(None, "me", env={})
    assert r.code == 2 and one_line_error(r).startswith("hubgrid: HUBGRID_API_URL is not set")


@pytest.mark.parametrize("argv,words", [
    ([], "required: COMMAND"),
    (["sessions", "bogus"], "invalid choice: 'bogus'"),
    (["sessions", "dry-run", "--gpu", "1", "--gpu-shares", "0.5"], "not allowed with"),
    (["folders", "share", "data", "bob", "--permission", "all"], "invalid choice: 'all'"),
    (["me", "--bogus"], "unrecognized arguments: --bogus"),
])
async def test_usage_errors_exit_2_with_one_line(hubgrid, argv, words):
    r = await hubgrid("alice", *argv)
    assert r.code == 2 and words in one_line_error(r)


async def test_help_goes_to_stdout_and_exits_0(hubgrid):
    r = await hubgrid(None, "sessions", "start", "-h", env={})
    assert r.code == 0 and r.out.startswith("usage: hubgrid sessions start") and r.err == ""


async def test_the_module_runs_as_the_hubgrid_command(hubgrid):
    env = {**os.environ, **hubgrid.env("alice"),
           }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyterlab_hubgrid.cli", "me", "--json", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err
    assert json.loads(out)["name"] == "alice"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyterlab_hubgrid.cli", "sessions", "dry-run", "-p", "nope",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert (proc.returncode, out, err) == (1, b"",
                                           b"hubgrid: project acme/nope not found (HTTP 404)\n")


# --- output helpers, as data ----------------------------------------------------------------

@pytest.mark.parametrize("value,text", [
    ("plain", "plain"), ("a\nb", "a\\nb"), ("\x1b[31mred", "\\x1b[31mred"),
    ("evil\u202etxt.exe", "evil\\u202etxt.exe"), ("tab\there", "tab\\there"), (None, "-"),
    ("<b>bold</b> [red]x[/red]", "<b>bold</b> [red]x[/red]"), ("\x9b2J", "\\x9b2J"),
    ("日本語", "日本語"),
])
def test_user_strings_are_shown_as_inert_text(value, text):
    assert safe(value) == text


def test_log_output_keeps_its_lines_and_tabs_only():
    assert safe_log("a\tb\r\nc\rd\x1b[0m\n") == "a\tb\nc\\rd\\x1b[0m\n"


@pytest.mark.parametrize("seconds,text", [(0, "0s"), (59, "59s"), (65, "1m05s"),
                                          (3725, "1h02m"), (93784, "1d02h"), (-3, "0s")])
def test_durations(seconds, text):
    assert duration(seconds) == text


def _commands(parser, path=()) -> set[tuple[str, ...]]:
    """Every runnable command path of the parser: leaves, and groups that run alone."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = set()
    if not subs or parser.get_default("func") is not None:
        found.add(path)
    for action in subs:
        for name, sub in action.choices.items():
            found |= _commands(sub, path + (name,))
    return found


def _documented(text: str) -> set[tuple[str, ...]]:
    import re

    found = set()
    for code in re.findall(r"`hubgrid ([^`]*)`", text):
        words = []
        for token in code.split():
            if not re.fullmatch(r"[a-z][a-z-]*(\\\|[a-z][a-z-]*)*", token):
                break
            words.append(token.split("\\|"))
        paths = [()]
        for choices in words:
            paths = [p + (c,) for p in paths for c in choices]
        found |= set(paths) - {()}
    return found


def test_the_reference_documents_every_command_and_no_other():
    from jupyterlab_hubgrid.cli import build_parser

    doc = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    assert _documented(doc) == _commands(build_parser())


async def test_every_command_prints_json_that_parses(hubgrid, tmp_path):
    a = await allocate(hubgrid, "alice", cpu="1")
    await write_log(hubgrid, a["id"], b"hello\x1b[0m\n")
    local = tmp_path / "f.txt"
    local.write_text("hi")
    runs = [
        ("alice", "me"), ("alice", "quota"), ("alice", "sessions", "ls"),
        ("alice", "sessions", "ls", "--all"), ("alice", "sessions", "show", a["id"][:8]),
        ("alice", "sessions", "logs", a["id"][:8]),
        ("alice", "sessions", "dry-run", "-g", "gpu", "--mem", "0"),
        ("alice", "folders", "create", "data"), ("alice", "folders", "ls"),
        ("alice", "folders", "upload", "data", str(local)), ("alice", "folders", "files", "data"),
        ("alice", "folders", "download", "data", "f.txt", str(tmp_path / "g.txt")),
        ("alice", "folders", "share", "data", "bob"), ("bob", "folders", "invitations"),
        ("alice", "folders", "invitations", "ls", "--sent"),
        ("alice", "sessions", "stop", a["id"][:8]),
    ]
    got = {}
    for user, *argv in runs:
        r = await hubgrid(user, *argv, "--json")
        assert r.code == 0, (argv, r.err)
        got[" ".join(argv[:2])] = r.json()
    assert got["sessions logs"]["log"] == "hello\x1b[0m\n"  # JSON carries the exact bytes
    assert got["sessions show"]["id"] == a["id"]
    assert got["folders download"]["size"] == 2
    inv = got["folders invitations"][0]
    r = await hubgrid("bob", "folders", "invitations", "accept", inv["id"][:8], "--json")
    assert r.code == 0 and r.json()["state"] == "accepted"
    r = await hubgrid("alice", "sessions", "logs", a["id"], "-f", "--json")
    assert r.code == 2 and "--follow" in one_line_error(r)
