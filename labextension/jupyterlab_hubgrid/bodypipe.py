"""A request body passed on as it arrives: the forwarder's browser side
(``data_received``) puts chunks in, the upstream request's ``body_producer``
takes them out and writes them to the service.

One chunk is in flight at a time, so the browser is read no faster than the
service takes the bytes (memory stays at a chunk, whatever the body's size).
If the upstream request ends early (the service answered before the whole
body, or broke off), the rest of the body is read and dropped; if the browser
goes away mid-body, the upstream request is aborted, so the service sees a
broken-off body (a tus upload keeps its offset, a PUT leaves nothing).

:class:`RefusalDrain` is for answers the forwarder gives *before* the body
went anywhere (a visitor, a missing XSRF token, no configuration): see there.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

from tornado.concurrent import Future, future_set_result_unless_cancelled
from tornado.ioloop import IOLoop

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


class RefusalDrain:
    """Mixin for a ``@stream_request_body`` handler: an answer given before
    the request's body has ended is *held* while the rest of the body is
    read and dropped, then sent, on a connection that stays clean and alive.

    Answered with the body unread, tornado closes the connection on unread
    bytes, the kernel resets it, and configurable-http-proxy (in front of
    every Jupyter server) loses the answer: it answered 503 to that request
    and to the next one on the same keep-alive connection. The hubgrid
    service holds its own refusals the same way (``quota_service/api/streamed.py``).

    Draining is bounded: a body declared longer than :attr:`drain_max_bytes`
    (or sent chunked) is not drained -- the answer goes at once, saying
    ``Connection: close``; a drain still running after :attr:`drain_seconds`
    is cut the same way. The handler drops the chunks while :attr:`draining`.
    """

    #: the largest body drained to answer a refusal cleanly (bytes)
    drain_max_bytes = 64 << 20
    #: the longest a drain may take (seconds) before the answer goes anyway
    drain_seconds = 60.0

    _held: tuple | None = None  # (args, kwargs, done, timer)
    _released = False

    @property
    def draining(self) -> bool:
        return self._held is not None

    def drain_length(self, headers) -> int | None:
        """The body's declared length if it may be drained, else None."""
        if "Transfer-Encoding" in headers:
            return None
        value = headers.get("Content-Length", "0")
        if re.fullmatch(r"[0-9]{1,19}", value) is None or int(value) > self.drain_max_bytes:
            return None
        return int(value)

    def finish(self, *args, **kwargs):
        if self._held is not None:  # send_error finishes again after write_error
            return self._held[2]
        body = getattr(self.request, "_body_future", None)
        if self._released or body is None or body.done():
            return super().finish(*args, **kwargs)
        length = self.drain_length(self.request.headers)
        if length is None:
            self._released = True
            self.set_header("Connection", "close")
            return super().finish(*args, **kwargs)
        self.request.connection.set_max_body_size(length)
        timer = IOLoop.current().call_later(self.drain_seconds, self._release, None, True)
        self._held = (args, kwargs, Future(), timer)
        body.add_done_callback(self._release)
        return self._held[2]

    def _release(self, _body=None, cut: bool = False) -> None:
        """Send the held answer: the body ended (or the browser left), or the
        drain was cut (``cut``: the connection closes after the answer)."""
        held, self._held = self._held, None
        if held is None:
            return
        args, kwargs, done, timer = held
        self._released = True
        IOLoop.current().remove_timeout(timer)
        if cut:
            self.set_header("Connection", "close")
        sent = super().finish(*args, **kwargs)

        def settle(f):
            f.exception()  # the browser left: nobody to tell
            future_set_result_unless_cancelled(done, None)

        sent.add_done_callback(settle)
