"""``hubgrid``: the hubgrid API from a terminal (Lab's, or anywhere).

Inside a hubgrid session it needs no set-up: it calls the service as the
session's owner. Elsewhere, export ``HUBGRID_API_URL`` and a keypair
(``HUBGRID_ACCESS_KEY``, ``HUBGRID_SECRET_KEY``); see
``jupyterlab_hubgrid.client``.

Commands: ``me``, ``quota``, ``sessions`` (ls, start, stop, logs, dry-run),
``folders`` (ls, files, create, upload, download, share, invitations),
``serve`` (model serving endpoints: list, show, validate, create, scale,
autoscale, delete, token).
Tables for people by default, ``--json`` for scripts.

Exit codes: 0 done; 1 the service (or the hub) refused, with its message;
2 a usage error (bad arguments, missing configuration, a local file that
cannot be read or written); 3 the service could not be reached.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Callable, Mapping, Sequence

from ..client import ClientError, HubgridClient, NotConfigured, ServiceUnreachable, Settings
from . import folders, me, quota, serve, sessions
from .base import (EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, PROG,
                   Context, Parser, UsageError, ParserExit)
from .output import safe

def common_options() -> argparse.ArgumentParser:
    """Options every command takes (after its name too)."""
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON for scripts instead of tables")
    return common


def build_parser() -> Parser:
    common = common_options()
    parser = Parser(prog=PROG, description="The hubgrid service from a terminal: "
                    "who you are, your quota, your sessions, your storage folders and "
                    "your model serving endpoints.",
                    epilog="Exit codes: 0 done, 1 refused by the service, 2 usage error, "
                    "3 service unreachable.")
    parser.add_argument("--json", action="store_true", default=False,
                        help="print JSON for scripts instead of tables")
    groups = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)
    groups.required = True
    for module in (me, quota, sessions, folders, serve):
        module.register(groups, common)
    return parser


def _streams(parser: argparse.ArgumentParser, out: IO[str]) -> None:
    """Point every (sub)parser's messages (help) at ``out``."""
    parser.out = out
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _streams(sub, out)


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None,
         stdout: IO[str] | None = None, stderr: IO[str] | None = None,
         client_factory: Callable[[Settings], HubgridClient] | None = None) -> int:
    """Run one ``hubgrid`` command; returns its exit code."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    parser = build_parser()
    _streams(parser, out)
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except ParserExit as e:
        if e.message:
            err.write(e.message)
        return e.status
    except UsageError as e:
        err.write(f"{safe(e)}\n")
        return EXIT_USAGE
    ctx = Context(out, err, bool(getattr(args, "json", False)),
                  os.environ if env is None else env, client_factory or HubgridClient)
    try:
        status = args.func(ctx, args)
        return EXIT_OK if status is None else status
    except UsageError as e:
        err.write(f"{PROG}: {safe(e)}\n")
        return EXIT_USAGE
    except NotConfigured as e:
        err.write(f"{PROG}: {safe(e.message)}\n")
        return EXIT_USAGE
    except ServiceUnreachable as e:
        err.write(f"{PROG}: {safe(e.message)}\n")
        return EXIT_UNREACHABLE
    except ClientError as e:
        err.write(f"{PROG}: {safe(e.message)} (HTTP {e.status})\n")
        return EXIT_REFUSED
    except KeyboardInterrupt:
        err.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader left (``hubgrid sessions logs x | head``): nothing more to
        # say, and nothing to flush at exit either
        if out is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        ctx.close()
