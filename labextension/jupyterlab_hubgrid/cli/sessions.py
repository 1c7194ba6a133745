"""``hubgrid sessions``: my sessions across projects and named servers.

A session is a JupyterHub server hubgrid admitted and placed: ``start`` and
``stop`` go through the hub's REST API (with ``JUPYTERHUB_API_TOKEN``),
everything else reads the service's allocations. ``dry-run`` asks the
scheduler whether the same request would fit now, and if not, why.
"""

from __future__ import annotations

import argparse
import re
import time
import uuid

from ..amounts import parse_bytes
from ..client import ClientError, format_amount, format_slot
from ..words import STATE_LABELS, api_state, state_label
from .base import EXIT_OK, EXIT_REFUSED, UsageError, command, group
from .output import duration, key_values, parse_time, safe, safe_log, short_id, table

ACTIVE = ("pending", "allocated")
#: how often ``logs --follow`` asks for more
FOLLOW_INTERVAL = 2.0
SERVER_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


# --- reading allocations ----------------------------------------------------------

def gpu_text(slots: dict) -> str:
    if slots.get("gpu.shares"):
        return f"{format_amount(slots['gpu.shares'])} (share)"
    if slots.get("gpu"):
        return format_amount(slots["gpu"])
    return "0"


def placement_text(a: dict) -> str:
    if not a.get("node"):
        return "-"
    gpus = ", ".join(f"{g['index']}:{format_amount(g['share'])}" for g in a.get("gpus") or [])
    return f"{a['node']} [{gpus}]" if gpus else a["node"]


def elapsed(a: dict, now) -> str:
    """Running: since admission; pending: waiting since the request; ended: how long it ran."""
    start = parse_time(a.get("admitted_at")) or parse_time(a.get("created_at"))
    if start is None:
        return "-"
    end = parse_time(a.get("ended_at") or a.get("released_at")) or now
    return duration((end - start).total_seconds())


def info_text(a: dict) -> str:
    """Why it waits (the scheduler's first reason), or how it ended."""
    reasons = a.get("reasons") or []
    if a.get("state") == "pending" and reasons:
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        return str(reasons[0].get("text", "")) + more
    parts = []
    if a.get("exit_code") is not None:
        parts.append(f"exit code {a['exit_code']}")
    if a.get("state") not in ACTIVE and a.get("release_reason"):
        parts.append(a["release_reason"])
    return "; ".join(parts)


def session_rows(allocations: list[dict], now) -> list[list]:
    rows = []
    for a in allocations:
        slots = a.get("slots") or {}
        rows.append([
            short_id(a["id"]), a.get("server_name") or "(default)", state_label(a.get("state")),
            a.get("project"), a.get("resource_group"), a.get("session_type"),
            a.get("image") or "-", format_slot("cpu", slots.get("cpu", 0)),
            format_slot("mem", slots.get("mem", 0)), gpu_text(slots), placement_text(a),
            elapsed(a, now), info_text(a)])
    return rows


HEADERS = ["ID", "NAME", "STATE", "PROJECT", "GROUP", "TYPE", "IMAGE", "CPU", "MEM", "GPU",
           "NODE [GPU:SHARE]", "ELAPSED", "INFO"]


def find_session(ctx, ref: str, active_only: bool = False) -> dict:
    """An allocation by its full id, a unique id prefix, or a server name of
    mine (the active one first, else the newest)."""
    client = ctx.client
    if re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", ref):
        return client.allocation(ref)
    me = client.me()["name"]
    mine = client.allocations(user=me)
    if active_only:
        mine = [a for a in mine if a.get("state") in ACTIVE]
    by_name = [a for a in mine if a.get("server_name") == ref]
    by_id = [a for a in mine if len(ref) >= 4 and a["id"].startswith(ref)]
    candidates = by_id or [a for a in by_name if a.get("state") in ACTIVE] or by_name[-1:]
    if not candidates:
        what = "active session" if active_only else "session"
        raise UsageError(f"no {what} of yours with the id or name {ref!r} "
                         "(see 'hubgrid sessions ls --all')")
    if len(candidates) > 1:
        ids = ", ".join(short_id(a["id"]) for a in candidates)
        raise UsageError(f"{ref!r} names several sessions ({ids}): give more of the id")
    return candidates[0]


def ls(ctx, args) -> None:
    client = ctx.client
    user = args.user or client.me()["name"]
    if args.state:
        allocations = client.allocations(args.state, user)
    elif args.all:
        allocations = client.allocations(None, user)
    else:
        allocations = client.allocations("allocated", user) + client.allocations("pending", user)
        allocations.sort(key=lambda a: a.get("created_at") or "")
    now = ctx.now()
    ctx.emit(allocations, lambda data: table(HEADERS, session_rows(data, now)) if data
             else "no sessions" + ("" if args.all or args.state else
                                   " running or waiting (--all shows the ended ones)"))


def render_one(a: dict, now) -> str:
    slots = a.get("slots") or {}
    lines = [key_values([
        ("id", a["id"]), ("name", a.get("server_name") or "(default)"), ("user", a.get("user")),
        ("state", state_label(a.get("state"))), ("project", f"{a.get('domain')}/{a.get('project')}"),
        ("resource group", a.get("resource_group")), ("type", a.get("session_type")),
        ("image", a.get("image") or "-"), ("command", a.get("command") or "-"),
        ("slots", ", ".join(f"{k} {format_slot(k, v)}" for k, v in slots.items())),
        ("placed on", placement_text(a)), ("elapsed", elapsed(a, now)),
        ("created", a.get("created_at")), ("ended", a.get("ended_at") or "-"),
        ("exit code", "-" if a.get("exit_code") is None else a["exit_code"]),
        ("ended because", a.get("release_reason") or "-"),
    ])]
    for r in a.get("reasons") or []:
        lines.append(f"{'waits' if r.get('kind') == 'wait' else 'refused'}: {safe(r.get('text'))}")
    for app in a.get("apps") or []:
        lines.append(f"app {safe(app.get('name'))}: {safe(app.get('url'))}")
    for m in a.get("mounts") or []:
        lines.append(f"mount {safe(m.get('name') or m.get('folder'))} at {safe(m.get('target'))}")
    return "\n".join(lines)


def show(ctx, args) -> None:
    a = find_session(ctx, args.session)
    now = ctx.now()
    ctx.emit(a, lambda data: render_one(data, now))


def hub_scope_hint(e: ClientError) -> ClientError:
    """The hub refused for lack of scope: say which setting grants it."""
    if e.status == 403 and "current scopes" in e.message:
        return ClientError(e.status, f"{e.message}; this token may not start or stop servers "
                           "(a session's own token needs c.Spawner.server_token_scopes to "
                           "include servers!user; or use a token from /hub/token)", e.reason)
    return e


# --- asking for a session -----------------------------------------------------------

def add_request_options(p, batch_help: str) -> None:
    p.add_argument("-p", "--project", help="one of your projects (default: your first)")
    p.add_argument("-g", "--group", "--resource-group", dest="group", default="default",
                   help="resource group (default: %(default)s)")
    p.add_argument("-i", "--image", help="an image your domain may use (Docker sessions)")
    p.add_argument("--cpu", default="1", help="CPU cores, decimal (default: %(default)s)")
    p.add_argument("--mem", default="2G", type=size_argument,
                   help="memory: 512M, 2G, 32 GiB, 1.5G or bytes; units are binary "
                        "(default: %(default)s)")
    gpus = p.add_mutually_exclusive_group()
    gpus.add_argument("--gpu", help="whole GPUs")
    gpus.add_argument("--gpu-shares", help="a share of one GPU, e.g. 0.5")
    p.add_argument("--gpu-model", action="append", default=[], dest="gpu_models", metavar="MODEL",
                   help="an allowed GPU model (repeat for several)")
    p.add_argument("--batch", metavar="COMMAND", help=batch_help)


def chosen_project(ctx, args) -> str:
    if args.project:
        return args.project
    projects = ctx.client.me().get("projects") or []
    if not projects:
        raise UsageError("you are in no project: ask your domain admin to add you to one")
    return projects[0]["name"]


def request_body(ctx, args) -> dict:
    """The allocation request of ``dry-run`` (what the spawner would ask)."""
    slots = {"cpu": args.cpu, "mem": args.mem}
    if args.gpu is not None:
        slots["gpu"] = args.gpu
    if args.gpu_shares is not None:
        slots["gpu.shares"] = args.gpu_shares
    body = {"project": chosen_project(ctx, args), "resource_group": args.group,
            "slots": slots, "gpu_models": args.gpu_models,
            "session_type": "batch" if args.batch is not None else "interactive"}
    if args.image:
        body["image"] = args.image
    if args.batch is not None:
        body["command"] = args.batch
    return body


def user_options(ctx, args) -> dict:
    """The hub's ``user_options`` of ``start`` (the spawn form's fields)."""
    opts = {"project": chosen_project(ctx, args), "resource_group": args.group,
            "cpu": args.cpu, "mem": args.mem}
    for key in ("image", "gpu", "gpu_shares"):
        if getattr(args, key) is not None:
            opts[key] = getattr(args, key)
    if args.gpu_models:
        opts["gpu_models"] = args.gpu_models
    if args.vfolders:
        opts["vfolders"] = args.vfolders
    if args.batch is not None:
        opts.update(session_type="batch", command=args.batch)
    return opts


def render_verdict(result: dict) -> str:
    if result.get("fits_now"):
        gpus = ", ".join(f"GPU {g['index']} ({format_amount(g['share'])})"
                         for g in result.get("gpus") or [])
        return f"fits now: node {safe(result.get('node'))}" + (f", {gpus}" if gpus else "")
    head = ("would be refused:" if result.get("verdict") == "refuse"
            else "would wait in the queue:")
    return "\n".join([head] + [f"  {safe(r.get('text'))}" for r in result.get("reasons") or []])


def dry_run(ctx, args) -> int:
    result = ctx.client.dry_run(request_body(ctx, args))
    ctx.emit(result, render_verdict)
    return EXIT_OK if result.get("fits_now") else EXIT_REFUSED


def start(ctx, args) -> int:
    client = ctx.client
    name = args.name or f"s-{uuid.uuid4().hex[:6]}"
    if not SERVER_NAME.match(name):
        raise UsageError(f"session name {name!r}: lowercase letters, digits, '.', '_' "
                         "and '-', starting with a letter or digit, at most 64")
    user = client.me()["name"]
    try:
        up = client.start_server(user, name, user_options(ctx, args))
    except ClientError as e:
        raise hub_scope_hint(e) from None
    status = EXIT_OK
    events = []
    if args.wait:
        for event in client.server_progress(user, name):
            events.append(event)
            if not ctx.json and event.get("message"):
                ctx.note(f"[{event.get('progress', '')}%] {safe(event['message'])}")
        last = events[-1] if events else {}
        up = bool(last.get("ready"))
        status = EXIT_OK if up else EXIT_REFUSED
    mine = [a for a in client.allocations(user=user) if a.get("server_name") == name]
    allocation = mine[-1] if mine else None
    result = {"name": name, "user": user, "ready": up, "allocation": allocation}
    if events:
        result["events"] = events

    def render(r):
        a = r["allocation"]
        if args.wait and not up:
            failed = events[-1].get("message") if events else "the start ended without a word"
            return f"session {safe(name)} did not start: {safe(failed)}"
        state = "running" if up else "starting"
        if up and events and events[-1].get("url"):
            state += f" at {safe(events[-1]['url'])}"
        if a is not None and a.get("state") == "pending":
            state = f"waiting in the queue: {safe(info_text(a))}"
        line = f"session {safe(name)} ({short_id(a['id']) if a else 'no allocation yet'}): {state}"
        return line + ("" if up else "\nfollow it with 'hubgrid sessions ls'")

    ctx.emit(result, render)
    return status


def stop(ctx, args) -> None:
    a = find_session(ctx, args.session, active_only=True)
    name = a.get("server_name") or ""
    if a.get("origin") == "hub":
        try:
            done = ctx.client.stop_server(a["user"], name)
        except ClientError as e:
            raise hub_scope_hint(e) from None
        state = "stopped" if done else "stopping"
    else:
        ctx.client.release(a["id"])
        state = state_label("released" if a.get("state") == "allocated" else "cancelled")
    ctx.emit({"id": a["id"], "name": name, "state": state},
             lambda r: f"session {safe(name or '(default)')} ({short_id(a['id'])}): {state}")


# --- logs ---------------------------------------------------------------------------

def size_argument(value: str) -> str:
    """``--mem``: a size in binary units or bytes, exactly, as a byte count."""
    try:
        return str(parse_bytes(value))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def logs(ctx, args) -> None:
    if ctx.json and args.follow:
        raise UsageError("--follow prints the output as it comes: leave out --json")
    show_log(ctx, find_session(ctx, args.session), args)


def show_log(ctx, a: dict, args) -> None:
    """Print allocation ``a``'s log as ``args`` ask (``tail``, ``follow``,
    ``raw``, ``interval``): also a replica's (``hubgrid serve logs``)."""
    client = ctx.client
    show_text = (lambda t: t) if args.raw else safe_log
    if ctx.json:
        ctx.emit({"id": a["id"], "state": a.get("state"), "exit_code": a.get("exit_code"),
                  "log": client.log(a["id"], args.tail)}, str)
        return
    if not args.follow:
        text = client.log(a["id"], args.tail)
        ctx.out.write(show_text(text))
        ctx.out.flush()
        if not text:  # say so, rather than print nothing
            ctx.note(f"hubgrid: no output from session {short_id(a['id'])} yet" if
                     a.get("state") in ACTIVE else
                     f"hubgrid: session {short_id(a['id'])} left no output")
        return

    def show(text: str) -> None:
        if text:
            ctx.out.write(show_text(text))
            ctx.out.flush()

    part = client.log_part(a["id"], tail=args.tail)
    show(part.text)
    while True:  # each byte once: every read goes on from where the last one ended
        state = client.allocation(a["id"])
        offset = part.end
        part = client.log_part(a["id"], offset=offset)  # after the state: its last words too
        if part.start > offset:
            ctx.note(f"hubgrid: {part.start - offset} bytes of output were dropped here "
                     "(the service keeps the newest part of a long log)")
        show(part.text)
        if state.get("state") not in ACTIVE:
            ended = info_text(state)
            ctx.note(f"hubgrid: session {state_label(state.get('state'))}"
                     + (f": {safe(ended)}" if ended else ""))
            return
        time.sleep(args.interval)


def add_log_options(p, what: str) -> None:
    """The options of ``show_log`` (``hubgrid sessions logs``, ``hubgrid serve
    logs``): ``what`` names whose output it is ("session", "replica")."""
    p.add_argument("--tail", type=tail_argument, metavar="SIZE",
                   help="only the last SIZE of the output (bytes, or 64K, 1 MiB)")
    p.add_argument("-f", "--follow", action="store_true",
                   help=f"keep printing new output until the {what} ends")
    p.add_argument("--raw", action="store_true",
                   help="print control characters as they are (escape sequences included)")
    p.add_argument("--interval", type=float, default=FOLLOW_INTERVAL, help=argparse.SUPPRESS)


def tail_argument(value: str) -> int:
    """``--tail``: a positive size (bytes, or in binary units)."""
    try:
        n = parse_bytes(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"a positive size, not {value!r}")
    return n


# --- the command table ----------------------------------------------------------------

def state_argument(word: str) -> str:
    """``--state``: the UI's word (running, waiting, ended, cancelled) or the API's."""
    try:
        return api_state(word)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def ls_by_default(ctx, args) -> None:
    """``hubgrid sessions`` alone: ``hubgrid sessions ls`` (its options unset)."""
    ls(ctx, argparse.Namespace(**{"all": False, "state": None, "user": None, **vars(args)}))


def register(groups, common) -> None:
    subs = group(groups, "sessions", "your sessions: list (also with no command), start, "
                 "stop, logs, dry-run", default=ls_by_default, parents=[common],
                 description=__doc__.split("\n\n", 1)[1])
    p = command(subs, "ls", common, ls, "your running and waiting sessions",
                aliases=["list"])
    p.add_argument("--all", action="store_true", help="the ended and cancelled ones too")
    p.add_argument("--state", type=state_argument, metavar="STATE",
                   help=f"only sessions in this state: {', '.join(STATE_LABELS.values())}")
    p.add_argument("--user", help="another user's (admins of their domain)")

    p = command(subs, "show", common, show, "one session in full: reasons, apps, mounts")
    p.add_argument("session", help="its id (or the start of it) or its name")

    p = command(subs, "start", common, start, "start a session through JupyterHub")
    p.add_argument("name", nargs="?", help="the session's (server's) name (default: s-<random>)")
    add_request_options(p, "a batch session running COMMAND; it ends when COMMAND exits")
    p.add_argument("--vfolder", action="append", default=[], dest="vfolders", metavar="FOLDER",
                   help="a folder to mount, by name or id (repeat for several)")
    p.add_argument("--wait", action="store_true",
                   help="follow the start until the session runs (exit 0) or fails (exit 1)")

    p = command(subs, "stop", common, stop, "stop a session (or cancel a waiting one)")
    p.add_argument("session", help="its id (or the start of it) or its name")

    p = command(subs, "logs", common, logs, "a session's output (also after it ended)")
    p.add_argument("session", help="its id (or the start of it) or its name")
    add_log_options(p, "session")

    p = command(subs, "dry-run", common, dry_run,
                "would this session fit now? If not, the scheduler's reasons "
                "(exit 0: it fits, 1: it would wait or be refused)")
    add_request_options(p, "ask for a batch session running COMMAND")

