"""When is a session reclaimed? (pure: decisions over values and an
injected ``now``, no IO).

Three rules, each driven by the resource policy that binds the session:

- ``idle``: no activity (the hub's last activity of the server, kernel and
  terminal activity inside the session, a busy kernel) for ``idle_timeout``
  seconds;
- ``lifetime``: ``max_session_lifetime`` seconds after the session started
  (interactive and batch alike);
- ``utilization``: the window's averages are under the policy's thresholds
  (``window.judge``), once the grace period from the start is over.

Each rule gives a deadline; the earliest one is announced to the owner
ahead of it (a notice): ``warning`` seconds, but never more than half the
rule's own timeout (a 120 s ``idle_timeout`` is announced after 60 s
without activity, not at once), and the session is reclaimed at the
deadline, never before its notice was up for the lead time. A "keep it"
pushes every deadline to ``kept_until``, a bounded number of times.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

RULES = ("lifetime", "idle", "utilization")


@dataclass(frozen=True)
class Settings:
    """The reclaim settings of one resource policy (None: rule off)."""

    idle_timeout: int | None = None
    max_lifetime: int | None = None
    utilization_window: int | None = None
    utilization_grace: int = 0
    thresholds: dict[str, Decimal] = field(default_factory=dict)
    operator: str = "and"
    warning: int = 0
    keep_extension: int = 0
    max_keeps: int = 0

    @property
    def any_rule(self) -> bool:
        return bool(self.idle_timeout or self.max_lifetime
                    or (self.utilization_window and self.thresholds))


@dataclass(frozen=True)
class Finding:
    """A rule that will reclaim the session at ``deadline`` unless things change."""

    rule: str
    deadline: dt.datetime
    reason: str
    numbers: dict


@dataclass(frozen=True)
class Notice:
    """The reclaim announced to the owner."""

    rule: str
    deadline: dt.datetime
    reason: str
    numbers: dict
    warned_at: dt.datetime


@dataclass(frozen=True)
class Decision:
    """What the pass does: ``none``, ``warn`` (record ``notice``), ``update``
    (the notice's numbers or deadline changed), ``clear`` (the notice no longer
    holds), ``reclaim`` or ``shadow`` (shadow mode: report it, stop nothing).
    ``held``: a reclaim that is due but waits for the Lab's save (``savehold``)."""

    action: str
    notice: Notice | None = None
    held: bool = False


def _s(seconds: float) -> dt.timedelta:
    return dt.timedelta(seconds=seconds)


def _iso(t: dt.datetime) -> str:
    return t.isoformat()


def utc_text(t: dt.datetime) -> str:
    """An instant as people read it in the service's texts: UTC, to the
    second, saying so (``2026-11-26 10:00:05 UTC``); the numbers keep ISO 8601."""
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def findings(st: Settings, started: dt.datetime, last_activity: dt.datetime | None,
             activity_source: str, utilization, now: dt.datetime,
             current: Notice | None, kept_until: dt.datetime | None) -> list[Finding]:
    """Every rule's deadline as of ``now``. ``utilization``: a
    ``window.Judgement`` (or None when the rule is off); an under-used
    session's deadline is ``warning`` seconds after it was first found so
    (kept from ``current``), so the owner is warned before it too."""
    out: list[Finding] = []
    if st.max_lifetime:
        deadline = started + _s(st.max_lifetime)
        out.append(Finding("lifetime", deadline,
                           f"running since {utc_text(started)}, longer than the policy's "
                           f"max_session_lifetime of {st.max_lifetime} s",
                           {"started_at": _iso(started), "max_session_lifetime": st.max_lifetime}))
    if st.idle_timeout:
        last = max(started, last_activity) if last_activity else started
        deadline = last + _s(st.idle_timeout)
        idle_for = max((now - last).total_seconds(), 0.0)
        out.append(Finding("idle", deadline,
                           f"no activity for {idle_for:.0f} s (last: {utc_text(last)}, "
                           f"{activity_source if last_activity and last_activity > started else 'the start'}); "
                           f"the policy's idle_timeout is {st.idle_timeout} s",
                           {"last_activity": _iso(last), "idle_seconds": round(idle_for),
                            "activity_source": activity_source,
                            "idle_timeout": st.idle_timeout}))
    if (utilization is not None and utilization.idle
            and now >= started + _s(st.utilization_grace)):
        if current is not None and current.rule == "utilization":
            deadline = current.deadline
        else:
            deadline = now + _s(st.warning)
        out.append(Finding("utilization", deadline,
                           f"under-used over the last {st.utilization_window} s: "
                           f"{utilization.why}",
                           dict(utilization.numbers, window=st.utilization_window,
                                grace=st.utilization_grace)))
    if kept_until is not None:
        out = [Finding(f.rule, max(f.deadline, kept_until), f.reason,
                       dict(f.numbers, kept_until=_iso(kept_until)))
               if f.deadline < kept_until else f for f in out]
    return out


def first(found: list[Finding]) -> Finding | None:
    """The finding that reclaims first (ties: lifetime, idle, utilization)."""
    if not found:
        return None
    return min(found, key=lambda f: (f.deadline, RULES.index(f.rule)))


def lead(st: Settings, rule: str) -> dt.timedelta:
    """How long before its deadline a rule's finding is announced: the
    policy's ``warning``, at most half the rule's own span (its timeout or
    lifetime), so a short timeout does not warn as soon as a session rests."""
    span = {"idle": st.idle_timeout, "lifetime": st.max_lifetime}.get(rule)
    return _s(min(st.warning, span // 2) if span else st.warning)


def decide(st: Settings, found: list[Finding], current: Notice | None, now: dt.datetime,
           slack: float, shadow: bool = False) -> Decision:
    """What to do now. ``slack``: the check interval (a warning later than
    ``deadline - warning + slack`` moves the deadline so that the owner is
    warned at least ``warning - slack`` seconds ahead; a service that was
    down never reclaims without a warning). In shadow mode a rule past its
    deadline is reported once (``current`` remembers it) and nothing else
    happens."""
    f = first(found)
    if f is None:
        return Decision("clear") if current is not None else Decision("none")
    if shadow:
        if now < f.deadline:
            return Decision("none")
        if current is not None and current.rule == f.rule and current.deadline == f.deadline:
            return Decision("none")  # reported already
        return Decision("shadow", Notice(f.rule, f.deadline, f.reason, f.numbers, now))
    ahead = lead(st, f.rule)
    if current is not None and current.rule == f.rule:
        deadline = max(f.deadline, current.warned_at + ahead - _s(slack))
        if now < f.deadline - ahead - _s(slack) and f.deadline > current.deadline:
            return Decision("clear")  # activity came back: no longer close
        notice = Notice(f.rule, deadline, f.reason, f.numbers, current.warned_at)
        if now >= deadline:
            return Decision("reclaim", notice)
        same = deadline == current.deadline and f.numbers == current.numbers
        return Decision("none" if same else "update", notice)
    if now < f.deadline - ahead:
        return Decision("clear") if current is not None else Decision("none")
    if st.warning <= 0:
        return Decision("reclaim", Notice(f.rule, f.deadline, f.reason, f.numbers, now)) \
            if now >= f.deadline else Decision("none")
    deadline = max(f.deadline, now + ahead - _s(slack))
    return Decision("warn", Notice(f.rule, deadline, f.reason, f.numbers, now))


def final(n: Notice, stopped_at: dt.datetime) -> tuple[str, dict]:
    """The reclaim as it happened: its reason and numbers as of the stop
    (``stopped_at``: when the session was really stopped, which is at or
    after the notice's deadline), not as they were when it was announced.
    The warning keeps its own numbers; this is the final record's."""
    numbers = dict(n.numbers, stopped_at=_iso(stopped_at),
                   late_seconds=max(int((stopped_at - n.deadline).total_seconds()), 0))
    stop = f"stopped at {utc_text(stopped_at)}"
    last = n.numbers.get("last_activity") if n.rule == "idle" else None
    if last and n.numbers.get("idle_timeout"):
        idle = max(int((stopped_at - dt.datetime.fromisoformat(last)).total_seconds()), 0)
        numbers["idle_seconds"] = idle
        # "(last: <when>, <source>)" as the finding said it
        seen = n.reason.partition("(last: ")[2].partition(")")[0]
        return (f"no activity for {idle} s when it was {stop} (last: {seen}); "
                f"the policy's idle_timeout is {n.numbers['idle_timeout']} s", numbers)
    started = n.numbers.get("started_at") if n.rule == "lifetime" else None
    if started and n.numbers.get("max_session_lifetime"):
        ran = max(int((stopped_at - dt.datetime.fromisoformat(started)).total_seconds()), 0)
        numbers["ran_seconds"] = ran
        return (f"ran for {ran} s, since {utc_text(dt.datetime.fromisoformat(started))}, "
                f"when it was {stop}; the policy's max_session_lifetime is "
                f"{n.numbers['max_session_lifetime']} s", numbers)
    return f"{n.reason}; {stop}", numbers


def can_keep(st: Settings, keeps: int) -> bool:
    return st.keep_extension > 0 and keeps < st.max_keeps


def keep(st: Settings, keeps: int, kept_until: dt.datetime | None,
         notice: Notice | None, now: dt.datetime) -> dt.datetime:
    """The new ``kept_until`` of one "keep it": ``keep_extension`` seconds
    after the announced deadline (or now, or the current keep, whichever is
    latest). Raises ValueError when the policy allows no more."""
    if st.keep_extension <= 0 or st.max_keeps <= 0:
        raise ValueError("the session's resource policy allows no keep")
    if keeps >= st.max_keeps:
        raise ValueError(f"kept {keeps} times already, the most the policy allows "
                         f"(max_keeps {st.max_keeps})")
    base = max([now] + ([notice.deadline] if notice else []) + ([kept_until] if kept_until else []))
    return base + _s(st.keep_extension)


def gpu_amount(gpus: list[dict]) -> Decimal:
    """How many GPUs a session holds (shares summed exactly)."""
    return sum((Decimal(str(g.get("share", "1"))) for g in gpus or []), Decimal(0))


def gpu_hours(gpus: Decimal, since: dt.datetime, until: dt.datetime) -> Decimal:
    """GPU-hours between two instants, exactly to the second."""
    seconds = max(int((until - since).total_seconds()), 0)
    return (gpus * seconds / Decimal(3600)).quantize(Decimal("0.0001"))


# --- notices as stored on the allocation (JSON) -------------------------------

def notice_from_json(data: dict | None) -> Notice | None:
    if not data or "rule" not in data:
        return None
    return Notice(data["rule"], dt.datetime.fromisoformat(data["deadline"]), data["reason"],
                  data.get("numbers", {}), dt.datetime.fromisoformat(data["warned_at"]))


def notice_to_json(n: Notice, shadow: bool = False) -> dict:
    return {"rule": n.rule, "deadline": _iso(n.deadline), "reason": n.reason,
            "numbers": n.numbers, "warned_at": _iso(n.warned_at), "shadow": shadow}


def public(data: dict | None, keeps: int, kept_until: dt.datetime | None) -> dict | None:
    """The allocation's ``reclaim`` in the API: the announced reclaim, or None.
    The notice carries the policy's keep bounds as they were when it was written."""
    n = notice_from_json(data)
    if n is None or data.get("shadow"):
        return None
    max_keeps, extension = int(data.get("max_keeps") or 0), int(data.get("keep_extension") or 0)
    return {"rule": n.rule, "deadline": _iso(n.deadline), "reason": n.reason,
            "numbers": n.numbers, "warned_at": _iso(n.warned_at),
            "can_keep": extension > 0 and keeps < max_keeps and "reclaimed_at" not in data,
            "keeps": keeps, "max_keeps": max_keeps, "keep_extension": extension,
            "kept_until": _iso(kept_until) if kept_until else None,
            # once it was stopped: the final record (numbers as of the stop)
            "stopped_at": data.get("stopped_at"), "final_reason": data.get("final_reason"),
            "final_numbers": data.get("final_numbers")}
