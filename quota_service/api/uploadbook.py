"""The uploads of the service process, as the files API keeps them: the
storage's ``Uploads`` (quota book, staging files, sweep) and the gate that
keeps every byte of a quota counted while folder usage is read and written
off the event loop."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, TypeVar

from ..storage.uploads import Uploads

T = TypeVar("T")


class UsageGate:
    """Orders reads of folder usage for a reservation against completed uploads.

    An upload is admitted against ``used`` (the owner's usage, read from the
    database) plus the bytes in flight (the quota book). A completed upload
    gives its reservation back as soon as its file lands; its bytes reach
    ``used`` once the usage write has committed, a moment later, in a worker
    thread. A reservation made in between would count those bytes zero
    times, and so would one whose read of ``used`` began before the commit.
    So a completion that grows a folder says when it starts recording and
    when it is done (``recording``, ``recorded``), and ``read`` -- the read
    of ``used`` a reservation follows with no ``await`` in between -- waits
    until none is recording and reads again if one started meanwhile.
    """

    def __init__(self) -> None:
        #: bumped whenever a completion starts recording
        self.generation = 0
        self._recording = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def recording(self) -> None:
        """A completion released its bytes; its usage write is on its way."""
        self.generation += 1
        self._recording += 1
        self._idle.clear()

    def recorded(self) -> None:
        """That usage write has committed (or failed)."""
        self._recording -= 1
        if self._recording == 0:
            self._idle.set()

    async def read(self, read: Callable[[], Awaitable[T]]) -> T:
        """``await read()`` with no completion recording during it."""
        while True:
            await self._idle.wait()
            generation = self.generation
            value = await read()
            if generation == self.generation:
                return value


class FileUploads(Uploads):
    """The uploads of the service process and their usage gate."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.usage = UsageGate()
