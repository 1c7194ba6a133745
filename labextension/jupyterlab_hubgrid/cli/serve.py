"""``hubgrid serve``: model serving endpoints (docs/serving.md).

An endpoint runs a model folder (its model-definition.yaml) as replicas,
each an inference session under your quota, reached through the gateway.
ENDPOINT is an endpoint's name, project/name, its id or the start of it
(4 characters or more).
"""

from __future__ import annotations

import argparse
import time

from ..client import ClientError
from . import servecall, servestore, servetokens
from .base import EXIT_OK, EXIT_REFUSED, UsageError, command, group
from .folders import find_folder
from .output import safe, short_id
from .serveview import (COMPARATORS, emit_created, find_endpoint, problem_lines,
                        render_endpoint, render_list, render_validation, rule_text,
                        with_gateway)
from .servewait import add_wait_options, wait_then_emit
from .sessions import add_log_options, chosen_project, show_log, size_argument

#: how often ``delete`` asks whether the endpoint is gone
WAIT_INTERVAL = 1.0
METRICS = ("requests_per_second", "in_flight")


def ls(ctx, args) -> None:
    ctx.emit(ctx.client.endpoints(args.project), render_list)


def show(ctx, args) -> None:
    ctx.emit(with_gateway(ctx, find_endpoint(ctx, args.endpoint)), render_endpoint)


# --- validate and create ------------------------------------------------------------

def inference_image(ctx) -> str:
    """The one image I may use that runs inference replicas (else say which to pick)."""
    images = [i["name"] for i in ctx.client.images()
              if "inference" in (i.get("session_types") or [])]
    if len(images) == 1:
        return images[0]
    if not images:
        raise UsageError("no image that runs inference replicas is registered for you: "
                         "name one with --image")
    raise UsageError(f"several images run inference replicas ({', '.join(images)}): "
                     "choose one with --image")


def create_body(ctx, args) -> dict:
    """The endpoint's create body from the options (the folder found by name or id)."""
    if args.replicas < 0:
        raise UsageError(f"--replicas: 0 or more, not {args.replicas}")
    slots = {"cpu": args.cpu, "mem": args.mem}
    if args.gpu is not None:
        slots["gpu"] = args.gpu
    if args.gpu_shares is not None:
        slots["gpu.shares"] = args.gpu_shares
    folder = find_folder(ctx, args.folder)
    return {"name": args.name, "project": chosen_project(ctx, args),
            "resource_group": args.group, "image": args.image or inference_image(ctx),
            "model_folder": folder["id"], "slots": slots, "replicas": args.replicas,
            "public": args.public}


def validate(ctx, args) -> int:
    result = ctx.client.validate_endpoint(create_body(ctx, args))
    ctx.emit(result, render_validation)
    return EXIT_OK if result.get("ok") else EXIT_REFUSED


def create(ctx, args) -> int:
    """Validate first: problems are printed and nothing is made (exit 1);
    warnings are printed, then the endpoint is made."""
    client = ctx.client
    body = create_body(ctx, args)
    checked = client.validate_endpoint(body)
    if not checked.get("ok"):
        if ctx.json:
            ctx.emit({"created": False, "validation": checked}, str)
        else:
            ctx.note(f"endpoint {safe(args.name)} was not made:")
            for line in problem_lines(checked):
                ctx.note(f"  {line}")
        return EXIT_REFUSED
    e = with_gateway(ctx, client.create_endpoint(body))
    return wait_then_emit(ctx, e, args, lambda e: emit_created(ctx, e))


# --- scale, autoscale, delete ----------------------------------------------------------

def scale(ctx, args) -> int:
    if args.replicas < 0:
        raise UsageError(f"replicas: 0 or more, not {args.replicas}")
    e = find_endpoint(ctx, args.endpoint)
    got = ctx.client.update_endpoint(e["id"], {"replicas": args.replicas})
    return wait_then_emit(ctx, got, args, lambda got: ctx.emit(got, lambda g: (
        f"endpoint {safe(g['name'])}: {g['replicas']} replica(s) wanted, "
        f"{g.get('running_replicas', 0)} serving ({safe(g['state'])})")))


def autoscale_rule(args) -> dict:
    """One rule from the options; the comparator defaults to ``gt`` for a
    step up and ``lt`` for a step down."""
    missing = [f"--{n}" for n in ("metric", "threshold", "step")
               if getattr(args, n) is None]
    if missing:
        raise UsageError(f"a rule needs {', '.join(missing)} (or --off to remove the rules)")
    if args.step == 0:
        raise UsageError("--step: the replicas to add (positive) or remove (negative), not 0")
    rule = {"metric": args.metric, "threshold": args.threshold, "step": args.step,
            "comparator": args.comparator or ("gt" if args.step > 0 else "lt")}
    for key, value in (("min_replicas", args.min), ("max_replicas", args.max),
                       ("cooldown", args.cooldown)):
        if value is not None:
            rule[key] = value
    return rule


def autoscale(ctx, args) -> None:
    e = find_endpoint(ctx, args.endpoint)
    given = [args.metric, args.threshold, args.step, args.comparator, args.min, args.max,
             args.cooldown]
    if args.off:
        if any(v is not None for v in given) or args.add:
            raise UsageError("--off removes every rule: give no rule with it")
        rules = []
    elif all(v is None for v in given):  # no rule given: show them
        ctx.emit(e.get("autoscaling") or [], lambda rules: "\n".join(
            f"rule {i}: {safe(rule_text(r))}" for i, r in enumerate(rules))
            or f"endpoint {safe(e['name'])} has no autoscaling rules")
        return
    else:
        rules = [*(e.get("autoscaling") or [] if args.add else []), autoscale_rule(args)]
    got = ctx.client.update_endpoint(e["id"], {"autoscaling": rules})
    ctx.emit(got, lambda g: "\n".join(
        [f"endpoint {safe(g['name'])}: " + (f"{len(g['autoscaling'])} autoscaling rule(s)"
                                           if g.get("autoscaling") else "autoscaling off")]
        + [f"rule {i}: {safe(rule_text(r))}" for i, r in enumerate(g.get("autoscaling") or [])]))


def delete(ctx, args) -> int:
    """Delete, then wait until the endpoint is gone (its replicas stopped)."""
    client = ctx.client
    e = find_endpoint(ctx, args.endpoint)
    client.delete_endpoint(e["id"])
    name = e["name"]
    deadline = time.monotonic() + args.timeout
    state = "terminating"
    while True:
        try:
            now = client.endpoint(e["id"])
        except ClientError as err:
            if err.status != 404:
                raise
            state = "deleted"
            break
        state = now.get("state") or state
        if args.no_wait:
            break
        if not ctx.json:
            ctx.note(f"endpoint {safe(name)}: {safe(state)} "
                     f"({now.get('running_replicas', 0)} replica(s) serving)")
        if time.monotonic() >= deadline:
            ctx.emit({"id": e["id"], "name": name, "state": state, "deleted": False},
                     lambda r: f"endpoint {safe(name)} is still {safe(state)} after "
                     f"{args.timeout:g} s ({safe(now.get('state_reason'))}); "
                     "'hubgrid serve show' follows it")
            return EXIT_REFUSED
        time.sleep(args.interval)
    ctx.emit({"id": e["id"], "name": name, "state": state, "deleted": state == "deleted"},
             lambda r: f"endpoint {safe(name)} ({short_id(e['id'])}): "
             + ("deleted" if state == "deleted" else
                f"{safe(state)}; its replicas stop, then it is gone"))
    return EXIT_OK


# --- a replica's log ----------------------------------------------------------------------

def find_replica(ctx, e: dict, ref: str | None) -> dict:
    """A replica of ``e`` by its name or its number (the name's last part);
    none given: the first (a note says which, where there are several)."""
    replicas = [r for r in e.get("replicas_detail") or [] if r.get("allocation")]
    names = ", ".join(safe(r.get("name")) for r in replicas)
    if ref is None:
        if not replicas:
            raise UsageError(f"endpoint {e['name']!r} has no replica now")
        if len(replicas) > 1:
            ctx.note(f"hubgrid: the log of {safe(replicas[0]['name'])} (replicas: {names})")
        return replicas[0]
    match = [r for r in replicas if r.get("name") == ref
             or (ref.isdigit() and str(r.get("name", "")).rsplit("-", 1)[-1] == ref)]
    if not match:
        raise UsageError(f"endpoint {e['name']!r} has no replica {ref!r} "
                         f"(its replicas: {names or 'none'})")
    return match[0]


def logs(ctx, args) -> None:
    """A replica's output: its session's log (its creator and admins may read it)."""
    if ctx.json and args.follow:
        raise UsageError("--follow prints the output as it comes: leave out --json")
    e = find_endpoint(ctx, args.endpoint)
    r = find_replica(ctx, e, args.replica)
    try:
        a = ctx.client.allocation(r["allocation"])
    except ClientError as err:
        if err.status != 404:
            raise
        raise ClientError(404, f"{err.message}: replica {r['name']} is a session of the "
                          f"endpoint's creator ({e.get('created_by')}); its log is theirs and "
                          "their admins' to read", err.reason) from None
    show_log(ctx, a, args)


# --- the command table --------------------------------------------------------------------

def whole_number(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number, not {value!r}") from None
    return n


def add_endpoint_options(p) -> None:
    p.add_argument("name", help="the endpoint's name (unique in its project)")
    p.add_argument("folder", help="the model folder (holding model-definition.yaml), "
                   "by name or id")
    p.add_argument("-p", "--project", help="one of your projects (default: your first)")
    p.add_argument("-g", "--group", "--resource-group", dest="group", default="default",
                   help="resource group; it must run inference sessions "
                   "(default: %(default)s)")
    p.add_argument("-i", "--image", help="an image that runs inference replicas (default: "
                   "the only one registered for you)")
    p.add_argument("--cpu", default="1", help="CPU cores of one replica, decimal "
                   "(default: %(default)s)")
    p.add_argument("--mem", default="2G", type=size_argument,
                   help="memory of one replica: 512M, 2G, 32 GiB, 1.5G or bytes "
                   "(default: %(default)s)")
    gpus = p.add_mutually_exclusive_group()
    gpus.add_argument("--gpu", help="whole GPUs of one replica")
    gpus.add_argument("--gpu-shares", help="a share of one GPU per replica, e.g. 0.5")
    p.add_argument("-r", "--replicas", type=whole_number, default=1,
                   help="replicas wanted (default: %(default)s)")
    p.add_argument("--public", action="store_true",
                   help="callable without a token (admins of the domain only)")


def register(groups, common) -> None:
    subs = group(groups, "serve", "model serving: endpoints, their replicas, tokens and "
                 "autoscaling", description=__doc__.split("\n\n", 1)[1])
    p = command(subs, "list", common, ls, "the endpoints you see, with state and health",
                aliases=["ls"])
    p.add_argument("-p", "--project", help="only this project's")

    p = command(subs, "show", common, show, "one endpoint in full: state, health, replicas, "
                "URLs, autoscaling rules and recent scaling events")
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")

    p = command(subs, "validate", common, validate, "would this endpoint be made? Every "
                "problem and warning (exit 0: it can, 1: it cannot)")
    add_endpoint_options(p)

    p = command(subs, "create", common, create, "make an endpoint from a model folder "
                "(validated first: its problems refuse it, its warnings are shown)")
    add_endpoint_options(p)
    add_wait_options(p)

    p = command(subs, "scale", common, scale, "set the replicas wanted")
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")
    p.add_argument("replicas", type=whole_number, help="0 or more")
    add_wait_options(p)

    p = command(subs, "autoscale", common, autoscale,
                "set (or show, or remove) the autoscaling rule(s)",
                description="Without a rule, show the rules. With one, it replaces them "
                "(--add: after them); --off removes them. Judged on the gateway's "
                "measures per replica that is up (docs/serving.md, Autoscaling).")
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")
    p.add_argument("--metric", choices=METRICS, help="what is measured, per replica")
    p.add_argument("--threshold", help="a decimal, up to 3 places")
    p.add_argument("--comparator", choices=sorted(COMPARATORS),
                   help="gt, ge, lt or le (default: gt for a step up, lt for a step down)")
    p.add_argument("--step", type=whole_number,
                   help="replicas to add (e.g. 1) or remove (e.g. -1)")
    p.add_argument("--min", type=whole_number, help="min_replicas (service default 1)")
    p.add_argument("--max", type=whole_number, help="max_replicas (service default 4)")
    p.add_argument("--cooldown", type=whole_number,
                   help="seconds after a change before the next (service default 300)")
    p.add_argument("--add", action="store_true", help="keep the rules there and add this one")
    p.add_argument("--off", action="store_true", help="remove every rule")

    p = command(subs, "delete", common, delete, "delete an endpoint; waits until its "
                "replicas stopped and it is gone")
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")
    p.add_argument("--no-wait", action="store_true",
                   help="return once it is terminating")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds to wait at most (default: %(default)g; exit 1 after)")
    p.add_argument("--interval", type=float, default=WAIT_INTERVAL, help=argparse.SUPPRESS)

    p = command(subs, "logs", common, logs, "a replica's output (its creator and admins)")
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")
    p.add_argument("replica", metavar="REPLICA", nargs="?",
                   help="its name or number (default: the first)")
    add_log_options(p, "replica")

    servetokens.register(subs, common)
    servecall.register(subs, common)
    servestore.register(subs, common)

