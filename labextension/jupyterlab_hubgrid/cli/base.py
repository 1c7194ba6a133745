"""What every ``hubgrid`` command shares: exit codes, the usage error, the
argument parser writing to the command's own streams, and the Context a
command runs in."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Mapping

from ..client import HubgridClient, Settings
from .output import to_json

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130

PROG = "hubgrid"


class UsageError(Exception):
    """Bad arguments or local input: exit 2 with this message."""


class ParserExit(Exception):
    def __init__(self, status: int, message: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message


class Parser(argparse.ArgumentParser):
    """argparse writing to the command's own streams; an error is one line."""

    out: IO[str] | None = None

    def _print_message(self, message, file=None):
        if message:
            (self.out or sys.stdout).write(message)

    def exit(self, status=0, message=None):
        raise ParserExit(status, message or "")

    def error(self, message):
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} -h')")


@dataclass
class Context:
    """What a command needs: its streams, the output mode and a client made
    on first use (so a configuration error is reported like any other)."""

    out: IO[str]
    err: IO[str]
    json: bool
    env: Mapping[str, str]
    client_factory: Callable[[Settings], HubgridClient] = HubgridClient
    _client: HubgridClient | None = field(default=None, repr=False)

    @property
    def client(self) -> HubgridClient:
        if self._client is None:
            self._client = self.client_factory(Settings.from_env(self.env))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.timezone.utc)

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        """A remark for people, on stderr (never mixed into --json output)."""
        self.err.write(text + "\n")
        self.err.flush()

    def emit(self, data: Any, render: Callable[[Any], str]) -> None:
        """``data`` as JSON with --json, else ``render(data)``."""
        self.print(to_json(data) if self.json else render(data))


def command(groups: argparse._SubParsersAction, name: str, common: argparse.ArgumentParser,
            func: Callable[[Context, argparse.Namespace], int | None], help: str,
            **kw) -> Parser:
    """A leaf command ``name`` under ``groups`` that runs ``func(ctx, args)``."""
    p = groups.add_parser(name, help=help, description=kw.pop("description", help),
                          parents=[common, *kw.pop("parents", [])], **kw)
    p.set_defaults(func=func)
    return p


def group(groups: argparse._SubParsersAction, name: str, help: str,
          default: Callable | None = None, **kw) -> argparse._SubParsersAction:
    """A command group ``name`` (e.g. ``sessions``) and its sub-command table;
    ``default``: what the group alone runs (else its sub-command is required)."""
    p = groups.add_parser(name, help=help, description=kw.pop("description", help), **kw)
    subs = p.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)
    if default is None:
        subs.required = True
    else:
        p.set_defaults(func=default)
    return subs


