"""The CLI's and the widgets' words: the same words for
the same states as the Lab UI (one mapping, jupyterlab_hubgrid/words.py,
checked against labextension/src/words.ts), and ``hubgrid me`` saying what
its parentheses mean. Pure: no service."""

from __future__ import annotations

import argparse
import re
from decimal import Decimal as D
from pathlib import Path

import pytest

from jupyterlab_hubgrid import words
from jupyterlab_hubgrid.cli import build_parser, folders, me, sessions

REPO = Path(__file__).resolve().parent.parent


def test_the_cli_names_states_exactly_as_the_lab_does():
    ts = (REPO / "labextension/src/words.ts").read_text()
    block = re.search(r"STATE_LABELS[^=]*=\s*\{(.*?)\};", ts, re.S).group(1)
    lab = dict(re.findall(r"(\w+):\s*'([^']*)'", block))
    assert lab == words.STATE_LABELS
    assert words.STATE_LABELS["allocated"] == "running"


@pytest.mark.parametrize("word, state", [("running", "allocated"), ("allocated", "allocated"),
                                         ("waiting", "pending"), ("ended", "released"),
                                         ("cancelled", "cancelled")])
def test_state_takes_the_uis_word_or_the_apis(word, state):
    assert sessions.state_argument(word) == state


def test_a_word_that_is_no_state_is_refused_with_the_choices():
    with pytest.raises(argparse.ArgumentTypeError, match="running, waiting, ended, cancelled"):
        sessions.state_argument("allocate")


def test_a_listed_session_reads_running_not_allocated():
    rows = sessions.session_rows([{"id": "0123456789", "state": "allocated", "slots": {}},
                                  {"id": "abcdef0123", "state": "pending", "slots": {}}], None)
    assert [r[2] for r in rows] == ["running", "waiting"]


def test_me_says_what_its_parentheses_mean():
    text = me.render({"name": "alice", "domain": "acme", "role": "user",
                      "resource_policy": None, "credential": "token",
                      "domain_detail": {"total_resource_slots": {}},
                      "projects": [{"name": "ml", "total_resource_slots":
                                    {"cpu": D(4), "mem": D(34359738368)}}]})
    assert "acme (no limits)" in text and "(none)" not in text
    assert "ml (limits: cpu 4, mem 32 GiB)" in text
    assert "none (no personal limits; 'hubgrid quota' shows every level)" in text
    assert re.search(r"^role +user$", text, re.M)


def test_me_without_its_domains_detail_claims_no_limits():
    text = me.render({"name": "bob", "domain": "acme", "role": "user", "projects": []})
    assert re.search(r"^domain +acme$", text, re.M)
    assert "none (ask your domain admin)" in text


@pytest.mark.parametrize("value, expected", [("2G", str(2 << 30)), ("512 MiB", str(512 << 20)),
                                             ("1.5G", "1610612736"), ("1073741824", "1073741824")])
def test_mem_is_read_exactly_in_binary_units(value, expected):
    assert sessions.size_argument(value) == expected


@pytest.mark.parametrize("value", ["0.3K", "1.5", "-1G", "2 parsecs"])
def test_a_mem_that_is_not_whole_bytes_is_a_usage_error(value):
    with pytest.raises(argparse.ArgumentTypeError):
        sessions.size_argument(value)


@pytest.mark.parametrize("argv, func", [
    (["sessions", "list", "--all"], sessions.ls),
    (["folders", "list", "--trashed"], folders.ls),
    (["folders", "invitations", "list"], folders.invitations_ls),
])
def test_list_is_ls_as_the_groups_help_words_it(argv, func):
    """``hubgrid --help`` says "your sessions: list, start, ..." and people type
    ``hubgrid sessions list``: it runs ``ls`` (it was refused as an invalid choice)."""
    args = build_parser().parse_args(argv)
    assert args.func is func
    assert build_parser().parse_args(["ls" if a == "list" else a for a in argv]).func is func
