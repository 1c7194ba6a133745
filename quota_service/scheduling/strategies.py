"""The placement strategy the service decides with (``placement_strategy``).

``best-fit`` and ``first-fit`` need nothing; ``hubgrid`` packs against the
mix of requests this cluster has seen: its workload profile is read from the
ledger's most recent allocations, at start and then every ``refresh``
seconds, in a thread of its own (callers hold the ledger lock, and on SQLite
a second transaction of the same thread would wait for it forever)."""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ..core import db
from ..core import slots as slotlib
from ..core.models import Allocation
from . import ledger
from .placement import BestFit, FirstFit, Hubgrid, Strategy, WorkloadProfile

#: the strategies that need no workload profile, by setting value
SIMPLE = {"best-fit": BestFit, "first-fit": FirstFit}
#: the share of the recent requests a ``hubgrid`` profile covers
COVERAGE = 0.95


class StrategyProvider:
    """Hands out the current strategy; ``hubgrid``'s is rebuilt in the background."""

    def __init__(self, name: str, factory: sessionmaker[Session], window: int,
                 refresh: float, log: logging.Logger) -> None:
        if name != "hubgrid" and name not in SIMPLE:
            raise ValueError(f"unknown placement strategy {name!r}")
        self.name, self.factory, self.window, self.refresh, self.log = (
            name, factory, window, refresh, log)
        self._strategy: Hubgrid | None = None
        self._built = 0.0
        #: the last rebuild started in the background (tests join it)
        self.rebuilding: threading.Thread | None = None

    def get(self) -> Strategy:
        """The strategy to decide with now. The first call builds the
        ``hubgrid`` profile where it is made (at start, outside any
        transaction); later ones start a rebuild in a thread once the
        profile is older than ``refresh`` seconds and use the old one meanwhile."""
        if self.name in SIMPLE:
            return SIMPLE[self.name]()
        if self._strategy is None:
            self.rebuild()
        elif time.monotonic() - self._built > self.refresh:
            self._built = time.monotonic()  # one rebuild at a time
            self.rebuilding = threading.Thread(target=self.rebuild, name="workload profile",
                                               daemon=True)
            self.rebuilding.start()
        return self._strategy

    def rebuild(self) -> None:
        """Read the workload profile again (blocking); on failure keep the old one."""
        try:
            self._strategy = Hubgrid(self.workload_profile())
        except Exception:
            self.log.exception("could not rebuild the workload profile; keeping the old one")
            if self._strategy is None:
                self._strategy = Hubgrid(None)
        self._built = time.monotonic()

    def workload_profile(self) -> WorkloadProfile | None:
        """The profile of the ``window`` most recent allocations (None: none yet)."""
        with db.transaction(self.factory) as s:
            rows = list(s.scalars(select(Allocation).order_by(Allocation.created_at.desc())
                                  .limit(self.window)))
            requests = [ledger.placement_request(slotlib.from_text(a.slots), a.gpu_models)
                        for a in rows]
        return WorkloadProfile.from_requests(requests, COVERAGE) if requests else None
