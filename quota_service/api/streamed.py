"""Handlers that take their request body as a stream (uploads).

A refusal reaches every client, whatever the body's size. Tornado answers
a request refused before its body was read (a caller without credentials,
a missing permission, a full quota, a bad path) and closes the connection
with the body unread; the kernel then resets the connection, and a proxy
still sending the body (configurable-http-proxy in front of the service)
loses the answer and reports its own 503 "socket hang up". So an answer
given before the body has ended is *held*: the rest of the body is read and
dropped, and the answer goes when the body ends, on a connection that stays
clean (and alive).

Draining is bounded, so a refusal costs at most what the bound allows:
a body declared longer than :attr:`DrainingBody.drain_max_bytes` (or sent
chunked, with no declared size) is not drained -- the answer goes at once
and the connection closes; a drain still running after
:attr:`DrainingBody.drain_seconds` is cut the same way. A client that only
reads once it has sent its whole body may miss the answer in those two
cases (``docs/vfolders.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tornado.concurrent import Future, future_set_result_unless_cancelled
from tornado.ioloop import IOLoop

from ..core.errors import ApiError
from .base import APIHandler


def declared_length(handler: APIHandler) -> int:
    """The request body's Content-Length: required (411), exact integer."""
    if "Transfer-Encoding" in handler.request.headers:
        raise ApiError("uploads must declare their size with Content-Length, not "
                       "Transfer-Encoding", status=411)
    value = handler.request.headers.get("Content-Length")
    if value is None:
        raise ApiError("uploads must declare their size with Content-Length", status=411)
    if not re.fullmatch(r"[0-9]{1,19}", value):
        raise ApiError(f"Content-Length: not a byte count: {value[:30]!r}")
    return int(value)


@dataclass
class _Held:
    """An answer waiting for the end of the body."""

    chunk: object
    done: Future
    timer: object


class DrainingBody:
    """Mixin for ``@stream_request_body`` handlers: an answer given before
    the body has ended is held while the rest of the body is read and
    dropped (up to the bounds below), then sent. The handler takes the
    body's bytes in :meth:`body_received`."""

    #: the largest body drained to answer a refusal cleanly (bytes)
    drain_max_bytes = 64 << 20
    #: the longest a drain may take (seconds) before the answer goes anyway
    drain_seconds = 60.0

    _held: _Held | None = None
    _released = False

    def data_received(self, chunk: bytes) -> None:
        if self._held is None:
            self.body_received(chunk)
        # else: draining (tornado reads no more than the declared length)

    def body_received(self, chunk: bytes) -> None:
        raise NotImplementedError

    def _body_pending(self):
        """The request's body future while the body is still being read, else None."""
        body = getattr(self.request, "_body_future", None)
        return body if body is not None and not body.done() else None

    def _drain_length(self) -> int | None:
        """The body's declared length if it may be drained, else None."""
        if "Transfer-Encoding" in self.request.headers:
            return None
        value = self.request.headers.get("Content-Length", "0")
        if re.fullmatch(r"[0-9]{1,19}", value) is None or int(value) > self.drain_max_bytes:
            return None
        return int(value)

    def finish(self, chunk=None):
        if self._held is not None:  # send_error finishes again after write_error
            return self._held.done
        body = self._body_pending()
        if self._released or body is None:
            return super().finish(chunk)
        length = self._drain_length()
        if length is None:
            self._released = True
            self.set_header("Connection", "close")
            return super().finish(chunk)
        self.request.connection.set_max_body_size(length)
        timer = IOLoop.current().call_later(self.drain_seconds, self._release, None, True)
        self._held = _Held(chunk, Future(), timer)
        body.add_done_callback(self._release)
        return self._held.done

    def _release(self, _body=None, cut: bool = False) -> None:
        """Send the held answer: the body ended (or the client left), or the
        drain was cut (``cut``: the connection closes after the answer)."""
        held, self._held = self._held, None
        if held is None:
            return
        self._released = True
        IOLoop.current().remove_timeout(held.timer)
        if cut:
            self.set_header("Connection", "close")
        sent = super().finish(held.chunk)

        def settle(f):
            f.exception()  # the client left: nobody to tell
            future_set_result_unless_cancelled(held.done, None)

        sent.add_done_callback(settle)
