"""``hubgrid serve store``: the Model Store, model folders an admin
published, deployed as an endpoint of yours in one step (checked first;
the folder is mounted read-only, not copied).

MODEL is a published model's name, its id or the start of it (4
characters or more).
"""

from __future__ import annotations

from .base import EXIT_OK, EXIT_REFUSED, UsageError, command, group
from .output import key_values, safe, short_id, table
from .serveview import emit_created, problem_lines, slots_text, with_gateway
from .servewait import add_wait_options, wait_then_emit
from .sessions import chosen_project

HEADERS = ["NAME", "TITLE", "TASK", "ONE REPLICA", "IMAGE", "FOR", "ID"]


def scope(m: dict) -> str:
    return f"domain {m['domain']}" if m.get("domain") else "every domain"


def find_model(ctx, ref: str) -> dict:
    models = ctx.client.store_models()
    match = [m for m in models if m["id"] == ref] or [m for m in models if m.get("name") == ref]
    if not match and len(ref) >= 4:
        match = [m for m in models if m["id"].startswith(ref)]
    if not match:
        raise UsageError(f"no published model {ref!r} you may see "
                         "(see 'hubgrid serve store list')")
    if len(match) > 1:
        which = ", ".join(f"{short_id(m['id'])} ({scope(m)})" for m in match)
        raise UsageError(f"{ref!r} names several published models: {which}; give the id")
    return match[0]


def ls(ctx, args) -> None:
    ctx.emit(ctx.client.store_models(), lambda models: table(HEADERS, [
        [m.get("name"), (m.get("card") or {}).get("title") or "-",
         (m.get("card") or {}).get("task") or "-", slots_text(m.get("slots")), m.get("image"),
         scope(m), short_id(m["id"])] for m in models]) if models else
        "no published models (an admin publishes model folders: docs/serving.md)")


def render_card(m: dict) -> str:
    card = m.get("card") or {}
    folder = m.get("folder") or {}
    pairs = [("id", m["id"]), ("name", m.get("name")), ("model", card.get("model")),
             ("title", card.get("title")), ("version", card.get("version")),
             ("author", card.get("author")), ("task", card.get("task")),
             ("category", card.get("category")), ("architecture", card.get("architecture")),
             ("framework", ", ".join(card.get("framework") or []) or None),
             ("labels", ", ".join(card.get("label") or []) or None),
             ("license", card.get("license")),
             ("one replica", slots_text(m.get("slots"))), ("image", m.get("image")),
             ("published for", scope(m)),
             ("published", f"{m.get('published_at')} by {m.get('published_by')}"),
             ("folder", f"{folder.get('name')} "
                        f"({'available' if folder.get('available') else 'gone'})")]
    lines = [key_values([(k, v) for k, v in pairs if v is not None])]
    if card.get("description"):
        lines += ["", safe(card["description"])]
    return "\n".join(lines)


def show(ctx, args) -> None:
    ctx.emit(ctx.client.store_model(find_model(ctx, args.model)["id"]), render_card)


def deploy(ctx, args) -> int:
    """Check, then deploy: problems refuse it (exit 1), warnings are shown."""
    if args.replicas < 0:
        raise UsageError(f"--replicas: 0 or more, not {args.replicas}")
    client = ctx.client
    m = find_model(ctx, args.model)
    body = {"project": chosen_project(ctx, args), "resource_group": args.group,
            "replicas": args.replicas}
    if args.name:
        body["name"] = args.name
    checked = client.check_store_model(m["id"], body)
    if args.check or not checked.get("ok"):
        if ctx.json:
            ctx.emit({"deployed": False, "check": checked}, str)
        elif checked.get("ok"):
            ctx.print(f"ok: {safe(m['name'])} can be deployed as endpoint "
                      f"{safe((checked.get('endpoint') or {}).get('name'))}")
            for line in problem_lines(checked):
                ctx.print(f"  {line}")
        else:
            ctx.note(f"{safe(m['name'])} was not deployed:")
            for line in problem_lines(checked):
                ctx.note(f"  {line}")
        return EXIT_OK if checked.get("ok") else EXIT_REFUSED
    e = with_gateway(ctx, client.deploy_store_model(m["id"], body))
    return wait_then_emit(ctx, e, args, lambda e: emit_created(ctx, e))


def register(subs, common) -> None:
    store = group(subs, "store", "the Model Store: published models, deployed in one step",
                  description=__doc__.split("\n\n", 1)[1])
    command(store, "list", common, ls, "the published models you may deploy",
            aliases=["ls"])
    p = command(store, "show", common, show, "a published model's card")
    p.add_argument("model", metavar="MODEL", help="its name or id")
    p = command(store, "deploy", common, deploy, "deploy a published model as an endpoint "
                "of yours (checked first against your quota and the group)")
    p.add_argument("model", metavar="MODEL", help="its name or id")
    p.add_argument("-p", "--project", help="one of your projects (default: your first)")
    p.add_argument("-g", "--group", "--resource-group", dest="group", default="default",
                   help="resource group; it must run inference sessions "
                   "(default: %(default)s)")
    p.add_argument("--name", help="the endpoint's name (default: the model's)")
    p.add_argument("-r", "--replicas", type=int, default=1,
                   help="replicas (default: %(default)s)")
    p.add_argument("--check", action="store_true",
                   help="only check: every problem and warning, nothing made "
                   "(exit 0: it would be deployed, 1: not)")
    add_wait_options(p)
