"""Typed refusals of the service: each carries an HTTP status and a message."""

from __future__ import annotations


class ApiError(Exception):
    """A refusal the API answers with ``status`` and a JSON error body."""

    status = 400
    reason = "bad-request"

    def __init__(self, message: str, *, status: int | None = None, detail=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.detail = detail


class Invalid(ApiError):
    status = 422
    reason = "invalid"


class Conflict(ApiError):
    status = 409
    reason = "conflict"


class NotFound(ApiError):
    status = 404
    reason = "not-found"


class Hidden(NotFound):
    """A refusal that must not reveal whether the thing exists (a 404)."""


class Denied(ApiError):
    status = 403
    reason = "forbidden"


class Unauthenticated(ApiError):
    status = 401
    reason = "unauthenticated"


class Gone(ApiError):
    """It existed and was deleted for good (e.g. a log past its retention)."""

    status = 410
    reason = "gone"


class BadGateway(ApiError):
    """Something the service forwards to did not answer (e.g. the serving gateway)."""

    status = 502
    reason = "bad-gateway"


class Unavailable(ApiError):
    """What the call needs is not there now: not configured, or not reachable."""

    status = 503
    reason = "unavailable"
