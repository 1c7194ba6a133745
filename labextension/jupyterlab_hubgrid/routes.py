"""The server extension: ``<base_url>hubgrid/api/<path>`` forwards to the hubgrid API.

The Lab front end calls its own Jupyter server; this handler repeats the call
to the hubgrid service (``HubgridLab.api_url``, from ``$HUBGRID_API_URL``)
with the server's own credential (``$JUPYTERHUB_API_TOKEN``, sent as
``Authorization: token ...``), so the browser never holds a hubgrid
credential. What it guarantees:

- every verb is authenticated by the Jupyter server (``@web.authenticated``)
  and XSRF-checked like any other Jupyter API call (APIHandler: every verb but
  GET/HEAD needs the ``_xsrf`` token unless the request carries the server's
  own token);
- only the server's owner (``$JUPYTERHUB_USER``) may use it: a visitor of a
  shared server is refused with 403, since the forwarded calls act as the owner;
- the service's status codes, JSON bodies (errors included), query strings
  and a few headers (content type, ranges, tus upload headers, Location,
  rewritten to this server's prefix) pass through unchanged; an unreachable
  service is a 502 and a missing configuration a 503, each with a JSON message;
- a refusal given before a body went on (a visitor, no XSRF token, no
  configuration) is answered once the body has been read and dropped
  (``bodypipe.RefusalDrain``, bounded), so the connection stays usable behind
  configurable-http-proxy (which answered 503 otherwise, also to the next call).

Request bodies are streamed to the service as they arrive, one chunk in
flight at a time (``bodypipe``), whatever their size: an upload through
Lab runs at the pace of the slower side, with a chunk in memory. Answers are
buffered, up to tornado's 100 MB, except file downloads
(``vfolders/{id}/download``), which are streamed to the browser as they come,
at the browser's pace, whatever their size. ``request_timeout`` bounds a call
(the service's long-polls last at most 60 s; a download, or a body over
``BIG_BODY`` bytes, only while it connects) and ``max_connections`` how many
are open at once.
"""

from __future__ import annotations

import asyncio
import os
import re
from urllib.parse import quote, unquote_plus, urlparse

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import httputil, web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from traitlets import Float, Integer, TraitError, Unicode, default, validate
from traitlets.config import Configurable

from .bodypipe import BodyPipe, RefusalDrain

#: where the forwarder answers, under the server's base_url
PREFIX = "hubgrid/api/"

#: request headers repeated to the service (never cookies, the caller's
#: Authorization or Jupyter's XSRF header)
REQUEST_HEADERS = (
    "Accept", "Content-Type", "Range", "If-Match", "If-None-Match",
    "Tus-Resumable", "Upload-Offset", "Upload-Length", "Upload-Metadata",
    "Upload-Defer-Length", "Upload-Concat",
)
#: response headers repeated to the browser (and Content-Type; Location is rewritten)
RESPONSE_HEADERS = (
    "Content-Disposition", "Content-Range", "Accept-Ranges", "ETag",
    "Last-Modified", "Cache-Control", "Retry-After", "Tus-Resumable", "Tus-Version",
    "Tus-Extension", "Tus-Max-Size", "Upload-Offset", "Upload-Length", "Upload-Metadata",
    "Upload-Expires", "X-Hubgrid-Log-Start", "X-Hubgrid-Log-End",
)
#: answers streamed to the browser, never buffered: file downloads (any size)
STREAMED = re.compile(r"vfolders/[^/]+/download")
#: the largest streamed answer (no limit in practice)
STREAMED_MAX = 2**62
#: statuses that carry no body
BODYLESS = (204, 304)
#: verbs whose request body is streamed to the service
BODY_METHODS = ("POST", "PUT", "PATCH")
#: a body this large takes its time: no overall timeout (the connection's holds)
BIG_BODY = 2**20


class HubgridLab(Configurable):
    """Where and as whom the server extension calls the hubgrid API."""

    api_url = Unicode(
        help="""The hubgrid API base the forwarder calls, e.g.
        ``http://127.0.0.1:8000/services/hubgrid/api/v1/``. Inside a hubgrid
        session the spawner sets ``$HUBGRID_API_URL``, which is the default.
        Example: ``c.HubgridLab.api_url = "https://hub.example.org/services/hubgrid/api/v1/"``.""",
    ).tag(config=True)

    api_token = Unicode(
        help="""The token sent to the service (``Authorization: token ...``).
        Default: ``$JUPYTERHUB_API_TOKEN``, the single-user server's own token,
        which holds ``access:services!service=hubgrid`` when the hub's
        ``c.Spawner.server_token_scopes`` grants it (``hub_ext.config.configure``
        does).""",
    ).tag(config=True)

    keypair = Unicode(
        help="""A hubgrid keypair ``ACCESS:SECRET`` to send instead of the token
        (``Authorization: Keypair ACCESS:SECRET``), for a Jupyter server that
        does not run under the hub. Default: ``$HUBGRID_ACCESS_KEY`` and
        ``$HUBGRID_SECRET_KEY`` when both are set (as for the ``hubgrid``
        command). Example: ``c.HubgridLab.keypair = "AKIA...:..."``.""",
    ).tag(config=True)

    owner = Unicode(
        help="""The only user of this Jupyter server who may use the forwarder
        (the calls act as the credential's owner). Default: ``$JUPYTERHUB_USER``,
        the server's owner; a visitor of a shared server is refused. Empty (no
        hub): every user the server authenticates is its owner.""",
    ).tag(config=True)

    request_timeout = Float(
        120.0,
        help="""Seconds one forwarded call may take, connection included (the
        service's long-polls last at most 60 s). Example:
        ``c.HubgridLab.request_timeout = 300``.""",
    ).tag(config=True)

    max_connections = Integer(
        64,
        help="""Forwarded calls that may be open at once (the panels' long-polls
        each hold one); more wait for a free connection, within
        ``request_timeout``. Example: ``c.HubgridLab.max_connections = 128``.""",
    ).tag(config=True)

    activity_interval = Float(
        60.0,
        help="""Seconds between the session's activity reports to the hubgrid
        service (``POST allocations/{id}/activity``: the kernels, whether one is
        busy, the last kernel or terminal activity; ``activity.py``), which its
        idle reclamation counts as activity: a busy kernel keeps the session
        even with no browser attached. Only inside a hubgrid session
        (``$HUBGRID_ALLOCATION``, an ``api_url`` and a credential); 0: off.
        Keep it under the policies' ``idle_timeout``. Example:
        ``c.HubgridLab.activity_interval = 30``.""",
    ).tag(config=True)

    reclaim_save_ahead = Float(
        30.0,
        help="""Seconds before an announced reclaim of this session (the
        service's answer to the activity reports) at which the Lab saves every
        open document (``GET hubgrid/reclaim``; ``reclaimwatch.py``). Keep it
        above the time a save takes and under the policies' reclaim warning.
        Example: ``c.HubgridLab.reclaim_save_ahead = 60``.""",
    ).tag(config=True)

    reclaim_check_interval = Float(
        60.0,
        help="""With ``activity_interval`` 0 (no activity reports), seconds
        between the reports that only ask the hubgrid service for this
        session's announced reclaim and say how many Labs listen for it and
        how their save went (no kernel or terminal activity: the idle rule
        sees only the hub's). Without them no Lab hears of a reclaim, and
        what is unsaved in an open Lab is lost when the session is stopped.
        Unused while ``activity_interval`` is above 0. 0: off. Example:
        ``c.HubgridLab.reclaim_check_interval = 30``.""",
    ).tag(config=True)

    gateway_url = Unicode(
        help="""The serving gateway the Chat page calls through
        ``<base_url>hubgrid/gateway/`` (``gatewayroutes.py``), e.g.
        ``http://127.0.0.1:8000/services/hubgrid-gateway/``, and the one the
        Serving page gives for this Lab's notebooks (``hubgrid/gateway-info``).
        Default: ``$HUBGRID_GATEWAY_URL`` (the spawner sets it: in an isolated
        Docker session, its relay), else ``api_url`` with its
        ``services/hubgrid/api/v1/`` replaced by ``services/hubgrid-gateway/``
        (the hub's proxy serves both; a Docker session's relay carries both).
        Example: ``c.HubgridLab.gateway_url = "https://hub.example.org/services/hubgrid-gateway/"``.""",
    ).tag(config=True)

    _client = None
    _stream_client = None

    def client(self, streamed: bool = False) -> AsyncHTTPClient:
        """This server's own HTTP client (tornado's shared one allows 10 calls
        at once); ``streamed``: the one for downloads, whose answers may be
        of any size (tornado caps a body even when it is streamed)."""
        if streamed:
            if self._stream_client is None:
                self._stream_client = AsyncHTTPClient(
                    force_instance=True, max_clients=self.max_connections,
                    max_body_size=STREAMED_MAX)
            return self._stream_client
        if self._client is None:
            self._client = AsyncHTTPClient(force_instance=True, max_clients=self.max_connections)
        return self._client

    def close(self) -> None:
        for client in (self._client, self._stream_client):
            if client is not None:
                client.close()
        self._client = self._stream_client = None

    @default("api_url")
    def _default_api_url(self):
        return api_base(os.environ.get("HUBGRID_API_URL", ""))

    @default("gateway_url")
    def _default_gateway_url(self):
        return api_base(os.environ.get("HUBGRID_GATEWAY_URL", "")) or gateway_of(self.api_url)

    @validate("gateway_url")
    def _check_gateway_url(self, proposal):
        return api_base(proposal.value)

    @default("api_token")
    def _default_api_token(self):
        return os.environ.get("JUPYTERHUB_API_TOKEN", "")

    @default("keypair")
    def _default_keypair(self):
        access, secret = (os.environ.get(f"HUBGRID_{k}_KEY", "") for k in ("ACCESS", "SECRET"))
        return f"{access}:{secret}" if access and secret else ""

    @default("owner")
    def _default_owner(self):
        return os.environ.get("JUPYTERHUB_USER", "")

    @validate("api_url")
    def _check_api_url(self, proposal):
        return api_base(proposal.value)

    @validate("max_connections")
    def _check_connections(self, proposal):
        if proposal.value < 1:
            raise TraitError(f"max_connections must be at least 1, not {proposal.value}")
        return proposal.value

    @validate("reclaim_check_interval")
    def _check_reclaim_check(self, proposal):
        if proposal.value < 0:
            raise TraitError(f"reclaim_check_interval must be 0 or more, not {proposal.value}")
        return proposal.value

    @validate("reclaim_save_ahead")
    def _check_save_ahead(self, proposal):
        if proposal.value < 0:
            raise TraitError(f"reclaim_save_ahead must be 0 or more, not {proposal.value}")
        return proposal.value

    @validate("request_timeout")
    def _check_timeout(self, proposal):
        if not proposal.value > 0:
            raise TraitError(f"request_timeout must be positive, not {proposal.value}")
        return proposal.value

    def authorization(self) -> str:
        """The Authorization header for the service ("" when none is configured)."""
        if self.keypair:
            return f"Keypair {self.keypair}"
        return f"token {self.api_token}" if self.api_token else ""


def api_base(url: str) -> str:
    """An API base URL ending in one slash ("" stays ""); TraitError if not http(s)."""
    url = url.strip()
    if not url:
        return ""
    if urlparse(url).scheme not in ("http", "https"):
        raise TraitError(f"HubgridLab.api_url must be an http(s) URL, not {url!r}")
    return url.rstrip("/") + "/"


def gateway_of(api_url: str) -> str:
    """The serving gateway beside the hubgrid API at ``api_url`` ("" if it is not
    at the hub's usual ``services/hubgrid/api/v1/``)."""
    suffix = "services/hubgrid/api/v1/"
    return api_url[:-len(suffix)] + "services/hubgrid-gateway/" if api_url.endswith(suffix) else ""


def upstream_path(path: str) -> str | None:
    """The API path to call, each segment quoted again; None for a path that
    could leave the API (empty, ``.`` or ``..`` segments, a leading slash)."""
    segments = path.split("/")
    if not path or any(s in ("", ".", "..") for s in segments[:-1]) or segments[-1] in (".", ".."):
        return None
    return "/".join(quote(s, safe="") for s in segments)


def forwarded_query(query: str) -> str:
    """The query string without what Jupyter adds for itself (the service
    refuses unknown arguments): its ``token`` login argument (this server's
    secret) and the cache-busting timestamp JupyterLab's ``ServerConnection``
    appends to its calls (``?1700000000000``: a bare number, no ``=``). The
    other arguments pass as they came."""
    return "&".join(
        part for part in query.split("&")
        if part and not re.fullmatch(r"[0-9]+", part)
        and unquote_plus(part.partition("=")[0]) != "token")


def local_location(location: str, api_url: str, local_prefix: str) -> str | None:
    """The service's Location, moved under this server's prefix (None: outside the API)."""
    api_path = urlparse(api_url).path
    path = urlparse(location).path if "://" in location else location
    if not path.startswith(api_path):
        return None
    return local_prefix + path[len(api_path):]


def owner_only(config: HubgridLab, name: str) -> None:
    """A 403 for anybody but the server's owner (a visitor the hub let in)."""
    owner = config.owner
    if owner and name != owner:
        raise web.HTTPError(403, f"hubgrid: only {owner}, who owns this server, may use "
                                 f"hubgrid from it (you are {name})")


@web.stream_request_body
class ForwardHandler(RefusalDrain, APIHandler):
    """Forward one call under ``hubgrid/api/`` to the hubgrid API. A refusal
    before the body went on is answered once the body is read (``RefusalDrain``)."""

    _pipe: BodyPipe | None = None
    _answer: asyncio.Future | None = None

    def initialize(self, config: HubgridLab):
        self.hubgrid = config

    async def prepare(self):
        """Authenticated (and XSRF-checked) by Jupyter; a call with a body
        starts here, so its bytes go on to the service as they arrive."""
        await super().prepare()
        if self.request.method not in BODY_METHODS:
            return
        if not self.current_user:  # @web.authenticated would refuse, after the body
            raise web.HTTPError(403)
        self.request.connection.set_max_body_size(STREAMED_MAX)
        pipe = BodyPipe()
        # the owner and configuration checks first: a refusal leaves no pipe
        self._answer = asyncio.ensure_future(self.send(self.path_args[0], pipe))
        self._answer.add_done_callback(_retrieve)
        pipe.watch(self._answer)
        self._pipe = pipe

    def data_received(self, chunk: bytes):
        if self._pipe is not None and not self.draining:
            return self._pipe.put(chunk)
        return None  # refused: the body is read and dropped

    def on_connection_close(self):
        if self._pipe is not None:
            self._pipe.break_off()
        super().on_connection_close()

    def check_owner(self) -> None:
        owner_only(self.hubgrid, self.current_user.username)

    def upstream(self, path: str) -> str:
        cfg = self.hubgrid
        if not cfg.api_url:
            raise web.HTTPError(503, "hubgrid is not configured on this server: "
                                     "HUBGRID_API_URL (c.HubgridLab.api_url) is not set")
        if not cfg.authorization():
            raise web.HTTPError(503, "hubgrid: this server has no credential for the hubgrid "
                                     "API (JUPYTERHUB_API_TOKEN is not set)")
        api_path = upstream_path(path)
        if api_path is None:
            raise web.HTTPError(400, f"hubgrid: not an API path: {path[:200]!r}")
        query = forwarded_query(self.request.query)
        return cfg.api_url + api_path + (f"?{query}" if query else "")

    def send(self, path: str, pipe: BodyPipe | None = None) -> asyncio.Future:
        """Start the call to the service (its body from ``pipe``, if any); the
        owner check and the URL's come first, so a refusal sends nothing."""
        self.check_owner()
        url = self.upstream(path)
        headers = {k: v for k in REQUEST_HEADERS if (v := self.request.headers.get(k)) is not None}
        headers["Authorization"] = self.hubgrid.authorization()
        method = self.request.method
        stream = self.streams(path)
        timeout = self.hubgrid.request_timeout
        length = self.request.headers.get("Content-Length")
        if pipe is not None and length is not None:
            headers["Content-Length"] = length  # else tornado sends it chunked
        big = pipe is not None and (length is None or not length.isdigit()
                                    or int(length) > BIG_BODY)
        request = HTTPRequest(
            url, method=method, headers=headers, follow_redirects=False,
            body_producer=pipe.produce if pipe is not None else None,
            allow_nonstandard_methods=True, request_timeout=0 if stream or big else timeout,
            connect_timeout=min(10.0, timeout), decompress_response=not stream,
            header_callback=self.upstream_header if stream else None,
            streaming_callback=self.upstream_chunk if stream else None,
        )
        self._upstream: tuple | None = None
        self._streaming = False
        return asyncio.ensure_future(
            self.hubgrid.client(stream).fetch(request, raise_error=False))

    def streams(self, path: str) -> bool:
        """Whether the answer is streamed to the browser as it comes (downloads)."""
        return self.request.method == "GET" and STREAMED.fullmatch(path) is not None

    async def forward(self, path: str) -> None:
        if self._answer is not None:  # started in prepare; the body is all there
            self._pipe.end()
            answer = self._answer
        else:
            answer = self.send(path)
        try:
            response = await answer
        except (OSError, HTTPClientError) as e:
            raise web.HTTPError(502, f"hubgrid: the hubgrid service is unreachable: {e}") from None
        if self._streaming:
            if response.code == 599:  # broke off mid-answer: the browser's download fails
                raise web.HTTPError(502, f"hubgrid: the download broke off: {response.error}")
            return
        if response.code == 599:  # tornado's "no HTTP answer" (refused, timeout, reset)
            raise web.HTTPError(
                502, f"hubgrid: the hubgrid service is unreachable: {response.error}")
        self.relay(response)

    def upstream_header(self, line: str) -> None:
        """A streamed answer's status line and headers, as they arrive."""
        if self._upstream is None:
            start = httputil.parse_response_start_line(line.strip())
            self._upstream = (start.code, start.reason, httputil.HTTPHeaders())
        elif line.strip():
            self._upstream[2].parse_line(line)
        else:  # the blank line: the body comes next
            code, reason, headers = self._upstream
            self.relay_headers(code, reason, headers)
            if headers.get("Content-Length"):
                self.set_header("Content-Length", headers["Content-Length"])
            self.set_header("Content-Type", headers.get("Content-Type", "application/octet-stream"))
            self._streaming = True

    def upstream_chunk(self, chunk: bytes):
        """Pass a streamed answer's bytes on; the service waits while the browser lags."""
        self.write(chunk)
        return self.flush()

    def relay_headers(self, code: int, reason: str, headers) -> None:
        self.set_status(code, reason)
        for name in RESPONSE_HEADERS:
            value = headers.get(name)
            if value is not None:
                self.set_header(name, value)
        location = headers.get("Location")
        if location:
            local = local_location(location, self.hubgrid.api_url,
                                   url_path_join(self.base_url, PREFIX))
            if local is not None:
                self.set_header("Location", local)

    def relay(self, response) -> None:
        self.relay_headers(response.code, response.reason, response.headers)
        ctype = response.headers.get("Content-Type", "application/octet-stream")
        if response.code in BODYLESS or self.request.method == "HEAD":
            self.finish(set_content_type=ctype)
        else:
            self.finish(response.body or b"", set_content_type=ctype)

    @web.authenticated
    async def get(self, path):
        await self.forward(path)

    @web.authenticated
    async def head(self, path):
        await self.forward(path)

    @web.authenticated
    async def post(self, path):
        await self.forward(path)

    @web.authenticated
    async def put(self, path):
        await self.forward(path)

    @web.authenticated
    async def patch(self, path):
        await self.forward(path)

    @web.authenticated
    async def delete(self, path):
        await self.forward(path)


def _retrieve(future: asyncio.Future) -> None:
    """An upstream call nobody awaited (the browser left mid-body) keeps no
    unretrieved exception."""
    if not future.cancelled():
        future.exception()


def setup_route_handlers(web_app, parent=None) -> HubgridLab:
    """Add the forwarder to ``web_app``; returns its configuration."""
    config = HubgridLab(parent=parent)
    pattern = url_path_join(web_app.settings["base_url"], PREFIX, "(.*)")
    web_app.add_handlers(".*$", [(pattern, ForwardHandler, {"config": config})])
    web_app.settings["hubgrid_lab"] = config
    return config
