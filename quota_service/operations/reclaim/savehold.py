"""Does a reclaim wait for the Lab's save? (pure: values and an injected
``now``, no IO).

At a session's deadline the pass stops it, unless a Lab open on it is
saving its documents or is about to: the session's last activity report
(``labextension/jupyterlab_hubgrid/activity.py``) says how many Labs
listen for its reclaim (``listening``: a call waiting on
``hubgrid/reclaim``, or one that ended a moment ago and is retrying) and
how far the save of the announced notice went (``save``: ``saving`` from
the moment a Lab took the notice, then ``saved`` or ``failed``). The stop
waits:

- while a Lab is saving this notice's documents;
- while a Lab listens and has not taken this notice yet (its report
  period or its back-off may be longer than the warning; with a warning of
  0 the Lab hears of the reclaim only now);

and never longer than ``wait`` seconds after the deadline. No report, no
Lab listening, or a save that ended (saved or failed): the stop goes ahead.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from .activity import parse_time
from .rules import Notice, utc_text


@dataclass(frozen=True)
class Hold:
    """The stop waits until ``until`` at the latest, for ``why``."""

    until: dt.datetime
    why: str


def save_of(report: dict | None, notice: Notice) -> dict | None:
    """The report's save of this notice (the same warning), or None."""
    save = (report or {}).get("save") or {}
    warned = parse_time(save.get("warned_at"))
    if warned is None or warned != parse_time(notice.warned_at.isoformat()):
        return None
    return save


def hold(notice: Notice, report: dict | None, now: dt.datetime, wait: float) -> Hold | None:
    """Whether the stop of a session due now (``notice``) waits for its Lab's save."""
    if wait <= 0 or not report:
        return None
    until = notice.deadline + dt.timedelta(seconds=wait)
    if now >= until:
        return None
    save = save_of(report, notice)
    bound = f"until {utc_text(until)} at the latest"
    if save is not None:
        if save.get("state") == "saving":
            return Hold(until, f"the Lab is saving the open documents, {bound}")
        return None  # saved, or failed: nothing more to wait for
    if int(report.get("listening") or 0) > 0:
        return Hold(until, f"a Lab is open and has not saved yet, {bound}")
    return None
