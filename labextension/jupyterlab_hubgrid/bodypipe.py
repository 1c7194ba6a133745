"""A request body passed on as it arrives: the forwarder's browser side
(``data_received``) puts chunks in, the upstream request's ``body_producer``
takes them out and writes them to the service.

One chunk is in flight at a time, so the browser is read no faster than the
service takes the bytes (memory stays at a chunk, whatever the body's size).
If the upstream request ends early (the service answered before the whole
body, or broke off), the rest of the body is read and dropped; if the browser
goes away mid-body, the upstream request is aborted, so the service sees a
broken-off body (a tus upload keeps its offset, a PUT leaves nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

#: the queue's end-of-body marker
END = object()


class BodyBrokenOff(Exception):
    """The browser went away before the end of its body."""


class BodyPipe:
    """Chunks from the browser to the upstream request, one at a time."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue = asyncio.Queue(maxsize=1)
        self._upstream: asyncio.Future | None = None

    def watch(self, upstream: asyncio.Future) -> None:
        """The upstream request: once it is over, chunks are dropped."""
        self._upstream = upstream

    async def put(self, chunk: bytes) -> None:
        """Hand one chunk on; waits while the upstream is busy with the last."""
        upstream = self._upstream
        if upstream is not None and upstream.done():
            return  # the answer is in: the rest of the body is dropped
        putting = asyncio.ensure_future(self._queue.put(chunk))
        if upstream is None:
            await putting
            return
        await asyncio.wait([putting, upstream], return_when=asyncio.FIRST_COMPLETED)
        if not putting.done():
            putting.cancel()

    def end(self) -> None:
        """The body is complete."""
        self._offer(END)

    def break_off(self) -> None:
        """The browser went away: the upstream request fails mid-body."""
        self._offer(BodyBrokenOff("the browser broke off the request body"))

    def _offer(self, item) -> None:
        upstream = self._upstream
        if upstream is not None and upstream.done():
            return  # nothing reads any more
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:  # the producer still holds the last chunk
            putting = asyncio.ensure_future(self._queue.put(item))
            if upstream is not None:
                upstream.add_done_callback(lambda _: putting.cancel())

    async def produce(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        """tornado's ``body_producer``: write each chunk as it comes."""
        while True:
            item = await self._queue.get()
            if item is END:
                return
            if isinstance(item, BaseException):
                raise item
            await write(item)
