"""The garbage collector's settings for the long-running service.

CPython's cyclic collector runs a young collection every 700 container
objects allocated (less freed), and a full one whenever the objects that
survived since the last full one reach a quarter of the long-lived heap. A
decision allocates thousands (ORM rows and states, SQL parameters, HTTP
headers), so under a storm of requests the service collected a few hundred
times a second, and every full collection walked everything it keeps for
good: its modules, SQLAlchemy's compiled statements, the people and group
caches. It was a sixth of the service's CPU at 350 decisions a second, and
each full collection held every request up for 0.1 to 0.15 s
(docs/performance.md, "The garbage collector").

``settle`` is called once the service is ready to serve: what it holds by
then is collected once and frozen (``gc.freeze``: never walked again, as
gunicorn and Instagram do before forking workers), and young collections
wait for ``young`` objects. Cycles are still collected: later, in bigger
and fewer collections."""

from __future__ import annotations

import gc

#: what the older generations wait for: young collections per middle one,
#: middle collections per full one (CPython's own values)
OLDER = (10, 10)


def settle(young: int) -> tuple[int, int, int]:
    """Collect and freeze what the service holds now; young collections
    every ``young`` objects (0: CPython's defaults, nothing frozen).
    Returns the thresholds in force."""
    if young > 0:
        gc.collect()
        gc.freeze()
        gc.set_threshold(young, *OLDER)
    return gc.get_threshold()
