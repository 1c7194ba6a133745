"""What the serving controller does next for one endpoint, decided without IO.

An endpoint wants ``desired`` replicas. Each replica is a JupyterHub named
server of the endpoint's creator (``server_name``); the controller sees each
one as it stands now (:class:`Replica`: ``starting``, ``serving``,
``stopping``, ``stopped``: the hub keeps the server but it runs no more, e.g.
its container was killed) and whether one failed to start since the replicas were last
asked for. :func:`plan` answers with the actions (start a new replica,
replace a stopped one, stop one) and the endpoint's state:

- ``terminating`` (after DELETE): stop every replica; once none is left,
  ``remove`` says the endpoint's row may go;
- ``failed`` with the reason: a replica could not start (the image is
  missing, its command exited, the quota refused it); no new replica is
  started until the replicas are asked for again (PATCH);
- otherwise ``provisioning`` while none serves, ``degraded`` while some but
  not all of the desired serve, ``running`` when all do (also 0 of 0).

Too few replicas: stopped ones are replaced first (their names are kept),
then new ones take the lowest free number. Too many: those still starting
stop first, then the highest numbers; stopped ones not needed are removed
from the hub. Pure: no IO, no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STATES = ("starting", "serving", "stopping", "stopped")
#: server names: ep-<endpoint name>-<first 8 of its id>-<n>
NAME_RE = re.compile(r"^ep-(?P<name>[a-z0-9][a-z0-9_-]*)-(?P<id>[0-9a-f]{8})-(?P<n>[0-9]{1,4})$")


#: JupyterHub's longest server name (``jupyterhub.slugs.is_valid_safe_slug``)
MAX_SERVER_NAME = 30
#: the most of an endpoint's name a server name carries: ep-<this>-<8>-<4 digits>
NAME_PART = MAX_SERVER_NAME - len("ep--") - 8 - len("-") - 4


def server_name(endpoint_name: str, endpoint_id: str, n: int) -> str:
    """The named server of replica ``n`` (valid for JupyterHub: at most 30
    lowercase letters, digits and single hyphens, so an endpoint name is
    cut to ``NAME_PART`` characters with ``_`` read as ``-``; unique per
    endpoint by its id: two endpoints of one creator may share a name)."""
    part = re.sub(r"-{2,}", "-", endpoint_name.replace("_", "-"))[:NAME_PART].strip("-")
    return f"ep-{part}-{endpoint_id[:8]}-{n}"


def number(name: str) -> int | None:
    m = NAME_RE.match(name)
    return int(m.group("n")) if m else None


@dataclass(frozen=True)
class Replica:
    name: str
    state: str  # one of STATES


@dataclass(frozen=True)
class Action:
    kind: str  # "start" | "replace" | "stop"
    name: str


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...]
    state: str
    reason: str
    serving: int
    #: terminating and nothing left: the endpoint's row may be removed
    remove: bool = False


def _order(r: Replica) -> tuple[int, str]:
    n = number(r.name)
    return (n if n is not None else 10**6, r.name)


def plan(endpoint_name: str, endpoint_id: str, desired: int, replicas: list[Replica],
         terminating: bool = False, failure: str = "") -> Plan:
    """The actions and state of one endpoint (see the module's text)."""
    for r in replicas:
        if r.state not in STATES:
            raise ValueError(f"replica {r.name}: unknown state {r.state!r}")
    live = sorted((r for r in replicas if r.state in ("starting", "serving")), key=_order)
    stopped = sorted((r for r in replicas if r.state == "stopped"), key=_order)
    serving = sum(1 for r in live if r.state == "serving")
    if terminating:
        actions = tuple(Action("stop", r.name) for r in sorted(replicas, key=_order)
                        if r.state != "stopping")
        left = len(replicas)
        return Plan(actions, "terminating",
                    f"stopping {left} replica(s)" if left else "every replica is gone",
                    serving, remove=not replicas)
    actions: list[Action] = []
    if failure:
        # nothing new starts; what is too many still goes
        for r in live[desired:][::-1]:
            actions.append(Action("stop", r.name))
        return Plan(tuple(actions), "failed", failure, serving)
    if len(live) < desired:
        missing = desired - len(live)
        for r in stopped[:missing]:
            actions.append(Action("replace", r.name))
        missing -= min(missing, len(stopped))
        taken = {number(r.name) for r in replicas}
        n = 0
        while missing:
            if n not in taken:
                actions.append(Action("start", server_name(endpoint_name, endpoint_id, n)))
                missing -= 1
            n += 1
    else:
        extra = len(live) - desired
        starting = [r for r in live if r.state == "starting"][::-1]
        by_number = [r for r in live[::-1] if r.state != "starting"]
        for r in (starting + by_number)[:extra]:
            actions.append(Action("stop", r.name))
        # the hub's leftovers of replicas not needed any more go too
        actions += [Action("stop", r.name) for r in stopped]
    serving_after = min(serving, desired)
    if serving_after >= desired:
        state, reason = "running", f"{serving_after} of {desired} replica(s) serve"
    elif serving_after == 0:
        state, reason = "provisioning", f"0 of {desired} replica(s) serve"
    else:
        state, reason = "degraded", f"{serving_after} of {desired} replica(s) serve"
    return Plan(tuple(actions), state, reason, serving)
