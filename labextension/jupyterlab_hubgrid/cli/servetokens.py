"""``hubgrid serve token``: an endpoint's bearer tokens for the gateway.

A token's secret is shown once, when it is made; ``--quiet`` prints only
the secret, so a script can capture it (``TOKEN=$(hubgrid serve token
create emb --quiet)``).
"""

from __future__ import annotations

import argparse

from .base import UsageError, command, group
from .output import safe, short_id
from .serveview import find_endpoint, render_tokens

#: a token's life when --days is not given (the service allows up to its
#: endpoint_token_max_days, 90 by default)
DEFAULT_DAYS = 30


def create(ctx, args) -> None:
    if args.quiet and ctx.json:
        raise UsageError("--quiet prints the secret alone: leave out --json")
    e = find_endpoint(ctx, args.endpoint)
    t = ctx.client.create_endpoint_token(e["id"], args.days)
    if args.quiet:
        ctx.print(t["token"])
        return
    ctx.emit(t, lambda t: "\n".join([
        f"token {short_id(t['id'])} for endpoint {safe(e['name'])}, expires {t['expires_at']}:",
        t["token"],
        "it is shown this once: keep it now (send it as 'Authorization: Bearer <token>')"]))


def ls(ctx, args) -> None:
    e = find_endpoint(ctx, args.endpoint)
    ctx.emit(ctx.client.endpoint_tokens(e["id"]), render_tokens)


def revoke(ctx, args) -> None:
    e = find_endpoint(ctx, args.endpoint)
    tokens = ctx.client.endpoint_tokens(e["id"])
    match = [t for t in tokens if t["id"] == args.token] or (
        [t for t in tokens if t["id"].startswith(args.token)] if len(args.token) >= 4 else [])
    if not match:
        raise UsageError(f"endpoint {e['name']!r} has no token {args.token!r} "
                         f"(see 'hubgrid serve token list {e['name']}')")
    if len(match) > 1:
        raise UsageError(f"{args.token!r} names several tokens: give more of the id")
    t = match[0]
    ctx.client.revoke_endpoint_token(e["id"], t["id"])
    ctx.emit({**t, "state": "revoked"},
             lambda r: f"revoked token {short_id(t['id'])} of endpoint {safe(e['name'])}")


def days_argument(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of days, not {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"1 day or more, not {n}")
    return n


def register(subs, common) -> None:
    tokens = group(subs, "token", "an endpoint's bearer tokens: create, list, revoke",
                   aliases=["tokens"], description=__doc__.split("\n\n", 1)[1])
    p = command(tokens, "create", common, create,
                "make a token (its secret is shown this once)")
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")
    p.add_argument("--days", type=days_argument, default=DEFAULT_DAYS,
                   help="valid for this many days (default: %(default)s; the service "
                   "allows up to its maximum, 90 unless set otherwise)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print the secret only (for scripts)")

    p = command(tokens, "list", common, ls, "an endpoint's tokens with their state "
                "(never a secret)", aliases=["ls"])
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")

    p = command(tokens, "revoke", common, revoke, "revoke a token (it stays listed, revoked)")
    p.add_argument("endpoint", metavar="ENDPOINT", help="name, project/name or id")
    p.add_argument("token", metavar="ID", help="the token's id (or the start of it)")
