"""``hubgrid-admin``: the administrators' command over the hubgrid API.

    hubgrid-admin reconcile [--json]                 # a dry run: the differences
    hubgrid-admin reconcile --repair [--only ID ...] # repair them (all, or those)

It calls ``GET``/``POST reconcile`` as a superadmin, with the credentials of
the ``hubgrid`` command (labextension's client): ``HUBGRID_API_URL`` and a
keypair (``HUBGRID_ACCESS_KEY``, ``HUBGRID_SECRET_KEY``) or else a hub token
(``JUPYTERHUB_API_TOKEN``). Only the standard library: it runs anywhere.

Exit codes: 0 nothing to repair (dry run) or every repair done; 1 differences
found (dry run) or a repair failed; 2 the command could not ask (usage,
credentials, refused, unreachable); 3 no difference found or left, but a
source (an engine, Slurm, the hub) could not be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Mapping, TextIO

OK, DIFFERENCES, ERROR, INCOMPLETE = 0, 1, 2, 3


class CommandError(Exception):
    """The command could not ask, or was refused: exit 2 with this message."""


def credentials(env: Mapping[str, str], api_url: str | None) -> tuple[str, str]:
    """(API root, Authorization header) from the environment."""
    url = (api_url or env.get("HUBGRID_API_URL") or "").strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise CommandError("set HUBGRID_API_URL (or --api-url) to the hubgrid API, e.g. "
                           "https://<hub>/services/hubgrid/api/v1")
    access, secret = env.get("HUBGRID_ACCESS_KEY", ""), env.get("HUBGRID_SECRET_KEY", "")
    if access and secret:
        return url, f"Keypair {access}:{secret}"
    if access or secret:
        raise CommandError("a keypair needs both HUBGRID_ACCESS_KEY and HUBGRID_SECRET_KEY")
    if env.get("JUPYTERHUB_API_TOKEN"):
        return url, f"token {env['JUPYTERHUB_API_TOKEN']}"
    raise CommandError("no credentials: set HUBGRID_ACCESS_KEY and HUBGRID_SECRET_KEY (a "
                       "superadmin's keypair) or JUPYTERHUB_API_TOKEN")


def call(method: str, url: str, authorization: str, body: dict | None,
         timeout: float) -> dict:
    """The service's JSON answer; CommandError with its message otherwise."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": authorization, "Accept": "application/json",
        **({"Content-Type": "application/json"} if data is not None else {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read()).get("message") or e.reason
        except (ValueError, AttributeError):
            message = e.reason
        raise CommandError(f"the service refused: {e.code} {message}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise CommandError(f"cannot reach the hubgrid service at {url}: {reason}") from None
    except ValueError:
        raise CommandError(f"the answer of {url} is not JSON") from None


def exit_code(report: dict) -> int:
    """The exit code of a report (see the module's docstring)."""
    if report.get("repairs") is None:
        if report["differences"]:
            return DIFFERENCES
    elif any(r["outcome"] == "failed" for r in report["repairs"]):
        return DIFFERENCES
    return OK if report["complete"] else INCOMPLETE


def _plain(text) -> str:
    """Names come from containers and jobs: no control characters on the terminal."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(text))


def _source(name: str, part: dict, unit: str) -> str:
    if part.get("read"):
        return f"{name}: {part.get(unit, 0)} {unit}"
    if "skipped" in part:
        return f"{name}: not asked ({part['skipped']})"
    return f"{name}: COULD NOT BE READ ({part.get('error', '?')})"


def render(report: dict) -> str:
    """The report for people."""
    mode = "dry run" if report.get("repairs") is None else "repair"
    lines = [f"reconcile ({mode}) as of {report['as_of']}: {report['summary']}"]
    repairs = {r["id"]: r for r in report.get("repairs") or []}
    for d in report["differences"]:
        lines += ["", f"  {d['kind']:<18} {_plain(d['object'])}",
                  f"      why:    {_plain(d['why'])}", f"      repair: {_plain(d['repair'])}",
                  f"      id:     {_plain(d['id'])}"]
        if d["id"] in repairs:
            r = repairs.pop(d["id"])
            lines.append(f"      {r['outcome']}: {_plain(r['detail'])}")
    for r in repairs.values():  # listed, but no longer a difference
        lines += ["", f"  {_plain(r['id'])}: {r['outcome']} ({_plain(r['detail'])})"]
    if report["spared"]:
        lines += ["", f"left alone ({len(report['spared'])}):"]
        lines += [f"  {_plain(n['object'])}: {_plain(n['why'])}" for n in report["spared"]]
    src = report["sources"]
    parts = [_source("hub", src["hub"], "servers")]
    parts += [_source(f"docker {url}", p, "containers") for url, p in src["docker"].items()]
    parts += [_source("slurm", src["slurm"], "jobs"),
              f"ledger: {src['ledger'].get('live', 0)} live allocations"]
    lines += ["", "sources: " + "; ".join(_plain(p) for p in parts)]
    if mode == "dry run" and report["differences"]:
        lines.append("repair them: hubgrid-admin reconcile --repair (some: --only ID ...)")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hubgrid-admin", description="hubgrid administration (superadmins)")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("reconcile", help="compare the ledger with the containers, Slurm jobs "
                                         "and hub servers; repair the differences")
    r.add_argument("--repair", action="store_true",
                   help="repair the differences (default: a dry run that only lists them)")
    r.add_argument("--only", nargs="+", metavar="ID",
                   help="with --repair: repair only these differences (ids of a dry run)")
    r.add_argument("--json", action="store_true", help="print the service's JSON report")
    r.add_argument("--api-url", help="the hubgrid API (default $HUBGRID_API_URL)")
    r.add_argument("--timeout", type=float, default=300.0,
                   help="seconds to wait for the answer (default 300)")
    return p


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None,
         out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:  # argparse printed the usage
        return ERROR if e.code else OK
    if args.only and not args.repair:
        print("hubgrid-admin: --only goes with --repair", file=err)
        return ERROR
    try:
        url, auth = credentials(os.environ if env is None else env, args.api_url)
        if args.repair:
            body = {"differences": args.only} if args.only else {}
            report = call("POST", f"{url}/reconcile", auth, body, args.timeout)
        else:
            report = call("GET", f"{url}/reconcile", auth, None, args.timeout)
    except CommandError as e:
        print(f"hubgrid-admin: {e}", file=err)
        return ERROR
    print(json.dumps(report, indent=2) if args.json else render(report), file=out)
    return exit_code(report)


if __name__ == "__main__":  # pragma: no cover - python -m quota_service.operations.reconcile_cli
    sys.exit(main())
