"""The notebook widgets of labextension/jupyterlab_hubgrid/widgets.

First their logic as data (``widgets.model``: bars with exact labels and a
display-only fraction, session rows, the launcher's checks, bodies and
verdicts; ``widgets.refresh``: the auto-refresh task). Then the widgets
themselves, built with a client pointed at the real service
(tests/service_app.py, keypairs as in tests/test_cli.py): the values of the
widget tree, and buttons clicked with ``button.click()``. The widgets call
the service synchronously, as they do in a kernel, so they are built and
clicked in a worker thread here (the service runs on the test's loop).
Starting a session goes through the hub: tests/test_widgets_ui.py.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import pytest

import ipywidgets as W

from jupyterlab_hubgrid import amounts, widgets
from jupyterlab_hubgrid.client import HubgridClient
from jupyterlab_hubgrid.widgets import model
from jupyterlab_hubgrid.widgets.model import LaunchForm, make_bar
from jupyterlab_hubgrid.widgets.refresh import AutoRefresh
from service_app import served  # noqa: E402,F401

D = Decimal
GiB = 1 << 30
NOW = dt.datetime(2026, 11, 23, 12, 0, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def db_url(sqlite_db_url) -> str:
    """SQLite only: the widgets do not depend on the service's database."""
    return sqlite_db_url


# --- bars: exact labels, display-only fractions -----------------------------------------

@pytest.mark.parametrize("key,limit,used,pending,text,fraction,style", [
    ("gpu.shares", D(2), D("0.3") * 3, 0, "0.9 / 2", 0.45, "info"),
    ("gpu", D(1), D("0.3") + D("0.3") + D("0.3"), 0, "0.9 / 1", 0.9, "info"),
    # a slot with limit and use 0 stays a bar, empty
    ("gpu", D(0), D(0), 0, "0 / 0", 0.0, "info"),
    ("mem", D(0), D(0), 0, "0 B / 0 B", 0.0, "info"),
    ("mem", D(8 * GiB), D(512 << 20), 0, "512 MiB / 8 GiB", 0.0625, "info"),
    ("cpu", None, D(3), 0, "3 (unlimited)", 0.0, "info"),
    ("cpu", D(4), D(4), 0, "4 / 4", 1.0, "warning"),
    # a limit lowered under running sessions: over, the bar full
    ("cpu", D(2), D(3), 0, "3 / 2", 1.0, "danger"),
    ("gpu", D(0), D("0.5"), 0, "0.5 / 0", 1.0, "danger"),
    ("cpu", D(4), D(1), D(2), "1 / 4 (+2 waiting)", 0.25, "info"),
    ("sessions", 5, 3, 1, "3 / 5 sessions (+1 waiting)", 0.6, "info"),
    ("sessions", None, 0, 0, "0 sessions (unlimited)", 0.0, "info"),
    # one is one session, not "1 sessions"
    ("sessions", None, 1, 0, "1 session (unlimited)", 0.0, "info"),
    ("sessions", 1, 1, 0, "1 / 1 session", 1.0, "warning"),
    ("sessions", 2, 1, 0, "1 / 2 sessions", 0.5, "info"),
    ("folders", 1, 0, 0, "0 / 1 folder", 0.0, "info"),
    # a size no binary unit shows exactly: as the Lab shows it, never "200000014 B"
    ("storage", None, 200000014, 0, "≈ 190.73 MiB (unlimited)", 0.0, "info"),
    ("mem", D(2 * GiB), D(1610612736), 0, "1.5 GiB / 2 GiB", 0.75, "info"),
    ("storage", GiB, 15, 0, "15 B / 1 GiB", 15 / GiB, "info"),
    ("folders", 3, 2, 0, "2 / 3 folders", 2 / 3, "info"),
    ("tpu", D(2), D(1), 0, "1 / 2", 0.5, "info"),
])
def test_a_bar_labels_the_exact_amount_and_fills_a_float_fraction(key, limit, used, pending,
                                                                  text, fraction, style):
    bar = make_bar(key, limit, used, pending)
    assert (bar.text, bar.style) == (text, style)
    assert bar.fraction == pytest.approx(fraction) and isinstance(bar.fraction, float)
    assert 0.0 <= bar.fraction <= 1.0


def test_the_fraction_is_computed_exactly_and_only_then_made_a_float():
    # 0.1 + 0.2 of 0.3 is exactly full (in floats it would be 1.0000000000000002)
    assert model.fraction_of(D("0.1") + D("0.2"), D("0.3")) == 1.0
    assert make_bar("gpu.shares", D("0.3"), D("0.1") + D("0.2")).text == "0.3 / 0.3"


ME = {
    "name": "alice", "domain": "acme", "role": "user", "resource_policy": "default",
    "projects": [{"domain": "acme", "name": "ml", "max_concurrent_sessions": 5,
                  "total_resource_slots": {"cpu": D(4), "gpu.shares": D(1)},
                  "max_vfolder_count": 2, "max_vfolder_size": GiB}],
    "domain_detail": {"total_resource_slots": {"gpu.shares": D(2)}},
}
POLICY = {"name": "default", "total_resource_slots": {"cpu": D(6), "mem": D(0)},
          "unspecified_limited": False, "max_concurrent_sessions": None,
          "max_vfolder_count": 3, "max_vfolder_size": None}


def held(state="allocated", **slots):
    return {"user": "alice", "project": "ml", "domain": "acme", "state": state,
            "slots": {k.replace("_", "."): D(v) for k, v in slots.items()}}


def test_the_quota_view_has_every_level_every_slot_sessions_and_storage():
    allocations = [held(cpu=1, gpu_shares="0.3") for _ in range(3)] + [held("pending", cpu=3)]
    folders = [{"owner": {"kind": "user", "user": "alice"}, "usage_bytes": 15}]
    views = model.quota_view(amounts.compose_quota(ME, POLICY, allocations, folders))
    assert [(v.title, v.notes) for v in views] == [
        ("User alice", ("limits from resource policy default",)),
        ("Project ml", ("use counts only your own sessions (others' are shown to admins)",)),
        ("Domain acme", ("use counts only your own sessions (others' are shown to admins)",)),
    ]
    you, project, domain = ({b.key: (b.name, b.text) for b in v.bars} for v in views)
    assert you == {
        "cpu": ("CPU", "3 / 6 (+3 waiting)"), "mem": ("Memory", "0 B / 0 B"),
        "gpu": ("GPU", "0.9 (unlimited)"), "gpu.shares": ("GPU shares", "0.9 (unlimited)"),
        "sessions": ("Sessions", "3 sessions (unlimited) (+1 waiting)"),
        "folders": ("Folders", "1 / 3 folders"), "storage": ("Storage", "15 B (unlimited)"),
    }
    assert project["gpu.shares"] == ("GPU shares", "0.9 / 1")
    assert project["sessions"] == ("Sessions", "3 / 5 sessions (+1 waiting)")
    assert project["storage"] == ("Storage", "0 B / 1 GiB")
    assert domain["gpu.shares"] == ("GPU shares", "0.9 / 2")
    assert "storage" not in domain  # no storage limits at the domain level


# --- session rows ---------------------------------------------------------------------------

def allocation(**over):
    a = {"id": "0123456789abcdef", "user": "alice", "state": "allocated", "origin": "api",
         "server_name": None, "project": "ml", "resource_group": "gpu", "image": None,
         "slots": {"cpu": D(1), "mem": D(GiB), "gpu.shares": D("0.3")}, "reasons": [],
         "created_at": "2026-11-23T11:00:00+00:00", "admitted_at": "2026-11-23T11:58:55+00:00",
         "ended_at": None, "released_at": None, "exit_code": None, "release_reason": None}
    a.update(over)
    return a


def test_a_running_session_is_a_row_with_exact_slots_and_a_release_plan():
    row = model.session_row(allocation(), NOW)
    assert row.cells == ("01234567", "running", "ml", "gpu", "-", "1", "1 GiB",
                         "0.3 GPU share", "1m05s")
    assert (row.reasons, row.ended, row.active) == ((), "", True)
    assert row.stop == model.StopPlan("release", allocation="0123456789abcdef")


def test_a_waiting_session_shows_every_reason_of_the_scheduler_with_its_numbers():
    reasons = [{"kind": "wait", "text": "project ml cpu: used 3 + requested 3 > limit 4 (over by 2)"},
               {"kind": "wait", "text": "domain acme gpu.shares: used 2 + requested 0.5 > limit 2"}]
    row = model.session_row(allocation(state="pending", admitted_at=None, reasons=reasons), NOW)
    assert row.state_label == "waiting" and row.elapsed == "1h00m"
    assert row.reasons == tuple(r["text"] for r in reasons)


def test_an_ended_hub_session_says_how_it_ended_and_cannot_be_stopped():
    a = allocation(state="released", origin="hub", server_name="train", exit_code=3,
                   release_reason="the batch command exited",
                   ended_at="2026-11-23T11:59:00+00:00", slots={"gpu": D(2)})
    row = model.session_row(a, NOW)
    assert row.cells[:2] == ("train", "ended") and row.cells[7] == "2 GPU"
    assert row.elapsed == "5s" and row.ended == "exit code 3; the batch command exited"
    assert row.stop is None and not row.active


def test_a_hub_session_stops_through_the_hub_and_this_notebooks_own_is_marked():
    a = allocation(origin="hub", server_name="", image="hubgrid/base:latest")
    row = model.session_row(a, NOW, this_session=("alice", ""))
    assert row.stop == model.StopPlan("hub", user="alice", server="")
    assert row.this_one and row.name == "(default) (this notebook)"
    assert row.image == "hubgrid/base:latest"
    assert not model.session_row(a, NOW, this_session=("alice", "other")).this_one


def test_user_strings_are_kept_as_text_and_control_characters_are_shown_escaped():
    a = allocation(server_name="<script>alert(1)</script>", project="ml\x1b[2J",
                   image="img\u202etxt", state="pending",
                   reasons=[{"text": "<b>waits</b> & more"}])
    row = model.session_row(a, NOW)
    assert row.name == "<script>alert(1)</script>"
    assert (row.project, row.image) == ("ml\\x1b[2J", "img\\u202etxt")
    assert row.reasons == ("<b>waits</b> & more",)


def test_visible_sessions_are_mine_active_oldest_first_then_the_newest_ended():
    rows = [allocation(id="a2", created_at="2"), allocation(id="a1", created_at="1"),
            allocation(id="e1", state="released", ended_at="5"),
            allocation(id="e2", state="cancelled", released_at="7"),
            allocation(id="e3", state="released", ended_at="6"),
            allocation(id="bob", user="bob")]
    active, ended, total = model.visible_sessions(rows, "alice", ended_limit=2)
    assert [a["id"] for a in active] == ["a1", "a2"]
    assert ([a["id"] for a in ended], total) == (["e2", "e3"], 3)
    assert model.visible_sessions(rows, "alice")[1] == []


# --- the launcher as data ---------------------------------------------------------------------

GOOD = LaunchForm(name="s-1", project="ml", group="gpu", cpu="0.5", mem="2G")


@pytest.mark.parametrize("change,field", [
    ({"name": ""}, "name"), ({"name": "Big"}, "name"), ({"name": "-x"}, "name"),
    ({"name": "taken"}, "name"), ({"project": ""}, "project"), ({"group": ""}, "group"),
    ({"cpu": "0"}, "cpu"), ({"cpu": "-1"}, "cpu"), ({"cpu": "1e3"}, "cpu"),
    ({"mem": "lots"}, "mem"), ({"gpu_mode": "whole", "gpu": "0.5"}, "gpu"),
    ({"gpu_mode": "whole", "gpu": "0"}, "gpu"), ({"gpu_mode": "shares", "gpu": "1.5"}, "gpu"),
    ({"gpu_mode": "shares", "gpu": "0"}, "gpu"), ({"gpu_mode": "some"}, "gpu"),
    ({"type": "batch"}, "command"), ({"type": "cron"}, "type"),
])
def test_the_launcher_names_the_field_that_is_wrong(change, field):
    errors = model.check_form(LaunchForm(**{**GOOD.__dict__, **change}), taken=["taken"])
    assert list(errors) == [field]


@pytest.mark.parametrize("change", [
    {}, {"mem": "512 MiB"}, {"mem": "1073741824"}, {"gpu_mode": "shares", "gpu": "1"},
    {"gpu_mode": "shares", "gpu": "0.25"}, {"gpu_mode": "whole", "gpu": "2"},
    {"type": "batch", "command": "python train.py"},
])
def test_a_good_form_passes(change):
    assert model.check_form(LaunchForm(**{**GOOD.__dict__, **change})) == {}


def test_the_dry_run_asks_what_the_start_asks():
    form = LaunchForm(name="s-1", project="ml", group="gpu", image="hubgrid/base:latest",
                      cpu=" 0.5 ", mem="2G", gpu_mode="shares", gpu="0.5", type="batch",
                      command="python train.py")
    assert model.dry_run_body(form) == {
        "project": "ml", "resource_group": "gpu", "slots": {"cpu": "0.5", "mem": "2G",
                                                           "gpu.shares": "0.5"},
        "session_type": "batch", "image": "hubgrid/base:latest", "command": "python train.py"}
    assert model.user_options(form) == {
        "project": "ml", "resource_group": "gpu", "cpu": "0.5", "mem": "2G",
        "image": "hubgrid/base:latest", "gpu_shares": "0.5", "session_type": "batch",
        "command": "python train.py"}
    whole = LaunchForm(**{**form.__dict__, "gpu_mode": "whole", "gpu": "2",
                          "type": "interactive", "image": ""})
    assert model.dry_run_body(whole) == {"project": "ml", "resource_group": "gpu",
                                         "slots": {"cpu": "0.5", "mem": "2G", "gpu": "2"},
                                         "session_type": "interactive"}
    assert model.user_options(whole) == {"project": "ml", "resource_group": "gpu",
                                         "cpu": "0.5", "mem": "2G", "gpu": 2}


@pytest.mark.parametrize("result,kind,headline,reasons", [
    ({"verdict": "admit", "fits_now": True, "node": "n1",
      "gpus": [{"index": 0, "share": D("0.50")}], "reasons": []},
     "fits", "Fits now: node n1, GPU 0 (0.5)", ()),
    ({"verdict": "admit", "fits_now": True, "node": "n1", "gpus": [], "reasons": []},
     "fits", "Fits now: node n1", ()),
    ({"verdict": "pending", "fits_now": False, "node": None, "gpus": [],
      "reasons": [{"text": "project ml gpu.shares: used 0.9 + requested 0.3 > limit 1"}]},
     "waits", "Would wait in the queue:", ("project ml gpu.shares: used 0.9 + requested 0.3 > limit 1",)),
    ({"verdict": "refuse", "fits_now": False, "reasons": [{"text": "no node has 9 GPUs"}]},
     "refused", "Would be refused:", ("no node has 9 GPUs",)),
])
def test_the_verdict_says_whether_it_fits_now_and_why_not(result, kind, headline, reasons):
    assert model.verdict(result) == model.Verdict(kind, headline, reasons)


def test_a_suggested_name_is_free():
    assert model.suggest_name("abcdef0123", []) == "s-abcdef"
    assert model.suggest_name("abcdef0123", ["s-abcdef", "s-abcdef-2"]) == "s-abcdef-3"
    assert model.SERVER_NAME.match(model.suggest_name("0f" * 8, []))


# --- auto-refresh: an asyncio task on the running loop ---------------------------------------

class Gate:
    """A sleep that returns when the test opens it (no clock involved)."""

    def __init__(self):
        self.queue: asyncio.Queue = asyncio.Queue()
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        await self.queue.get()

    async def open(self, poller: AutoRefresh) -> None:
        before = poller.ticks
        self.queue.put_nowait(None)
        for _ in range(100):
            await asyncio.sleep(0)
            if poller.ticks > before or not poller.running:
                return


async def test_auto_refresh_ticks_on_the_running_loop_until_stopped():
    ticks, gate = [], Gate()
    poller = AutoRefresh(lambda: ticks.append(len(ticks)), 5, sleep=gate)
    poller.start()
    task = poller.task
    poller.start()  # a second start is a no-op
    assert poller.task is task
    for _ in range(3):
        await gate.open(poller)
    assert ticks == [0, 1, 2] and gate.asked[:3] == [5, 5, 5]
    poller.stop()
    assert not poller.running
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.queue.put_nowait(None)
    await asyncio.sleep(0)
    assert ticks == [0, 1, 2]


async def test_a_failing_tick_stops_the_auto_refresh_and_says_why():
    errors, gate = [], Gate()

    def tick():
        raise ValueError("boom")

    poller = AutoRefresh(tick, 1, on_error=errors.append, sleep=gate)
    poller.start()
    task = poller.task
    await gate.open(poller)
    await task
    assert not poller.running and [str(e) for e in errors] == ["boom"]


def test_auto_refresh_outside_an_event_loop_says_what_to_do_instead():
    poller = AutoRefresh(lambda: None, 1)
    with pytest.raises(RuntimeError, match="call refresh\\(\\) yourself"):
        poller.start()
    with pytest.raises(ValueError):
        AutoRefresh(lambda: None, 0)


# --- the widgets, against the real service ----------------------------------------------------

def keypair_env(served, user: str) -> dict:  # noqa: F811
    access, secret = served.auth(user).removeprefix("Keypair ").split(":", 1)
    return {"HUBGRID_API_URL": served.api, "HUBGRID_ACCESS_KEY": access,
            "HUBGRID_SECRET_KEY": secret}


@pytest.fixture
def world(served, cluster):  # noqa: F811
    cluster.add_group("gpu", {"n1": ("A100", "A100")}, cpu="8", mem="32G")
    cluster.set_project("acme", "ml", slots={"cpu": "4", "gpu.shares": "1"})
    cluster.set_domain("acme", slots={"gpu.shares": "2"})
    cluster.set_policy("default", total_resource_slots={"cpu": "6", "mem": "0"})
    served.cluster = cluster
    return served


@pytest.fixture
def clients(world):
    made = []

    def client(user: str = "alice", **env) -> HubgridClient:
        c = HubgridClient.from_env({**keypair_env(world, user), **env})
        made.append(c)
        return c

    yield client
    for c in made:
        c.close()


def off_loop(fn, *args, **kw):
    """Run ``fn`` in a worker thread: the widgets call the service
    synchronously, and the service answers on this test's loop."""
    return asyncio.to_thread(fn, *args, **kw)


async def allocate(world, user: str = "alice", **slots) -> dict:
    resp, body = await world.call("POST", "allocations", user, json_body={
        "project": "ml", "resource_group": "gpu", "slots": slots})
    assert resp.code in (201, 202), body
    return body


def walk(widget):
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from walk(child)


def texts(widget) -> list[str]:
    return [w.value for w in walk(widget) if isinstance(w, W.Label)]


def no_html(widget) -> bool:
    return not any(isinstance(w, (W.HTML, W.HTMLMath)) for w in walk(widget))


async def test_the_quota_widget_shows_point_nine_of_one_gpu_and_every_slot(world, clients):
    for _ in range(3):
        await allocate(world, cpu="1", **{"gpu.shares": "0.3"})
    q = await off_loop(widgets.quota, clients())
    assert q.status.value.startswith("updated at"), q.status.value
    assert q.who.value == "alice in domain acme (user)"
    shares = q.bar("project", "ml", "gpu.shares")
    assert (shares.name.value, shares.text.value) == ("GPU shares", "0.9 / 1")
    assert shares.progress.value == pytest.approx(0.9) and shares.progress.max == 1.0
    assert q.bar("domain", "acme", "gpu.shares").text.value == "0.9 / 2"
    assert q.bar("user", "alice", "cpu").text.value == "3 / 6"
    # a limit of 0 with nothing used stays visible
    mem = q.bar("user", "alice", "mem")
    assert (mem.text.value, mem.progress.value) == ("0 B / 0 B", 0.0)
    for level in q.levels:
        assert list(level.bars)[:4] == ["cpu", "mem", "gpu", "gpu.shares"]
    labels = texts(q)
    assert "Project ml" in labels and "Domain acme" in labels and "User alice" in labels
    assert no_html(q)

    # Refresh: the same widgets take the new amounts
    await allocate(world, cpu="1", **{"gpu.shares": "0.1"})
    await off_loop(q.refresh_button.click)
    assert q.bar("project", "ml", "gpu.shares") is shares
    assert (shares.text.value, shares.progress.value, shares.progress.bar_style) == (
        "1 / 1", 1.0, "warning")


async def test_the_quota_widget_says_why_it_could_not_refresh(world, clients):
    q = await off_loop(widgets.QuotaWidget, clients(HUBGRID_SECRET_KEY="wrong"))
    assert q.status.value.startswith("could not refresh: ") and "(HTTP 401)" in q.status.value
    assert q.levels == []


async def test_the_sessions_widget_lists_mine_with_reasons_and_stops_them(world, clients):
    world.cluster.join("bob", "acme", "ml")
    running = await allocate(world, cpu="3", mem="0")
    waiting = await allocate(world, cpu="3", mem="0")
    await allocate(world, "bob", cpu="1")
    s = await off_loop(widgets.sessions, clients())
    assert s.summary.value == "1 running, 1 waiting"
    assert [rw.row.id for rw in s.rows] == [running["id"], waiting["id"]]  # not bob's
    first, second = s.rows
    assert [c.value for c in first.cells] == [running["id"][:8], "running", "ml", "gpu", "-",
                                              "3", "0 B", "-", first.row.elapsed]
    assert [c.value for c in second.cells][:2] == [waiting["id"][:8], "waiting"]
    assert [i.value for i in second.info] == [
        "project ml cpu: used 3 + requested 3 > limit 4 (over by 2)"]
    # under the table, by name: reasons are longer than a column
    assert texts(s.notes) == [waiting["id"][:8],
                              "project ml cpu: used 3 + requested 3 > limit 4 (over by 2)"]
    assert (first.stop.description, second.stop.description) == ("Stop", "Cancel")
    header = [w.value for w in s.table.children[:len(model.COLUMNS)]]
    assert header == list(model.COLUMNS)
    assert no_html(s)

    await off_loop(first.stop.click)  # released (the scheduler admits the other in its time)
    assert s.status.value == f"session {running['id'][:8]}: released"
    assert [rw.row.id for rw in s.rows] == [waiting["id"]]
    await off_loop(s.rows[0].stop.click)
    assert s.status.value in (f"session {waiting['id'][:8]}: released",
                              f"session {waiting['id'][:8]}: taken out of the queue")
    assert s.rows == [] and s.table.children == ()
    assert s.summary.value == "0 running, 0 waiting (tick 'show ended' for the ended ones)"

    await off_loop(setattr, s.show_ended, "value", True)  # refreshes with the ended ones
    assert s.summary.value == "0 running, 0 waiting; the last 2 of 2 ended"
    ended = {rw.row.id: rw.cells[1].value for rw in s.rows}
    assert ended[running["id"]] == "ended" and ended[waiting["id"]] in ("ended", "cancelled")
    assert texts(s.notes)[:2] == [s.rows[0].row.name, s.rows[0].row.ended]
    assert s.rows[0].row.ended != ""  # the release reason
    assert all(rw.stop is None for rw in s.rows)


async def test_stopping_the_notebooks_own_session_asks_twice(world, clients):
    mine = await allocate(world, cpu="1", mem="0")
    s = await off_loop(widgets.SessionsWidget, clients(), launcher=False)
    # a session made through the API is never "this notebook's": pretend it is
    rw = s.rows[0]
    rw.row = model.SessionRow(**{**rw.row.__dict__, "this_one": True})
    assert await off_loop(s.stop, mine["id"]) is False
    assert rw.stop.description == "Really stop? (this notebook's)"
    assert "click again to stop it" in s.status.value
    resp, body = await world.call("GET", f"allocations/{mine['id']}", "alice")
    assert body["state"] == "allocated"
    assert await off_loop(s.stop, mine["id"]) is True
    resp, body = await world.call("GET", f"allocations/{mine['id']}", "alice")
    assert body["state"] == "released"


async def test_the_launcher_checks_whether_it_would_fit_now_and_why_not(world, clients):
    for _ in range(3):
        await allocate(world, cpu="1", mem="0", **{"gpu.shares": "0.3"})
    s = await off_loop(widgets.sessions, clients())
    launch = s.launcher
    assert (launch.project.value, launch.group.value) == ("ml", "gpu")
    assert launch.project.options == ("ml",) and model.SERVER_NAME.match(launch.name.value)
    launch.mem.value = "0"
    launch.gpu_mode.value = "shares"
    launch.gpu.value = "0.1"
    await off_loop(launch.check_button.click)
    assert launch.verdict.value == "Fits now: node n1, GPU 0 (0.1)", launch.status.value
    assert texts(launch.reasons) == [] and texts(launch.errors) == []

    launch.gpu.value = "0.3"
    await off_loop(launch.check_button.click)
    assert launch.verdict.value == "Would wait in the queue:"
    assert texts(launch.reasons) == [
        "project ml gpu.shares: used 0.9 + requested 0.3 > limit 1 (over by 0.2)"]

    launch.cpu.value = "lots"
    launch.gpu.value = "2"
    await off_loop(launch.check_button.click)
    assert texts(launch.errors) == [
        "CPU: a positive number of cores, e.g. 0.5 or 2",
        "GPUs: a share of one GPU, more than 0 and at most 1 (e.g. 0.5)"]
    assert launch.verdict.value == "" and texts(launch.reasons) == []
    assert no_html(s)


async def test_the_launcher_says_why_a_start_failed(world, clients):
    """A keypair alone cannot start servers (that goes through the hub):
    the reason is shown, nothing raises."""
    launch = await off_loop(widgets.launcher, clients())
    launch.mem.value = "0"
    assert await off_loop(launch.start) is False
    assert launch.status.value.startswith(f"session {launch.name.value} did not start: "
                                          "sessions start and stop through JupyterHub")
    launch.project.value = None
    await off_loop(launch.start_button.click)
    assert texts(launch.errors) == ["Project: choose a project"]


async def test_auto_refresh_is_a_task_on_the_running_loop_the_checkbox_starts_and_stops(
        world, clients):
    q = await off_loop(widgets.quota, clients())
    # outside an event loop (a plain thread) it says so and stays off
    await off_loop(setattr, q.auto, "value", True)
    assert q.auto.value is False and not q.poller.running
    assert "needs a running asyncio event loop" in q.status.value
    # on the loop (as in a kernel) ticking the box starts the task
    q.auto.value = True
    task = q.poller.task
    assert q.poller.running and q.status.value == "auto-refresh every 10 s"
    q.auto.value = False
    assert not q.poller.running and q.status.value == "auto-refresh off"
    with pytest.raises(asyncio.CancelledError):
        await task
    # stop_all stops every widget's, also of one no longer shown
    s = await off_loop(widgets.sessions, clients(), launcher=False)
    q.start_auto_refresh(every=2)
    s.start_auto_refresh()
    tasks = [q.poller.task, s.poller.task]
    assert q.status.value == "auto-refresh every 2 s"
    assert widgets.stop_all() == 2
    assert not q.auto.value and not s.auto.value
    for task in tasks:
        with pytest.raises(asyncio.CancelledError):
            await task
    assert widgets.stop_all() == 0
