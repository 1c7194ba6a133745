"""Refreshing a widget every so often without a thread: an asyncio task on
the kernel's own event loop (IPython kernels run one; widget callbacks and
cells run on it), stoppable at any time.

The refresh itself runs on that loop like a button's callback does: the
widgets are only ever touched from the kernel's thread.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable


class AutoRefresh:
    """Call ``tick()`` every ``interval`` seconds until :meth:`stop`.

    ``on_error(exc)`` is told when ``tick`` raises (it then stops);
    ``sleep`` is asyncio.sleep (tests pass one that does not wait)."""

    def __init__(self, tick: Callable[[], object], interval: float, *,
                 on_error: Callable[[BaseException], object] | None = None,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep):
        if interval <= 0:
            raise ValueError(f"auto-refresh interval must be positive, not {interval!r}")
        self.tick = tick
        self.interval = interval
        self.on_error = on_error
        self._sleep = sleep
        self._task: asyncio.Task | None = None
        #: how many ticks ran
        self.ticks = 0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def task(self) -> asyncio.Task | None:
        return self._task

    def start(self) -> None:
        """Start on the running loop (the kernel's); a no-op when running."""
        if self.running:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "auto-refresh needs a running asyncio event loop (a Jupyter kernel has "
                "one): call refresh() yourself instead") from None
        self._task = loop.create_task(self._run())

    def stop(self) -> None:
        """Stop: no tick runs after this returns."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        while True:
            await self._sleep(self.interval)
            try:
                self.tick()
            except Exception as e:  # noqa: BLE001 - reported, then the loop ends
                self._task = None
                if self.on_error is not None:
                    self.on_error(e)
                return
            self.ticks += 1
