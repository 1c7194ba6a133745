"""``<service>/console/hubgrid/gateway/<path>``: the serving gateway, for the
console's Chat page.

The Lab's Chat calls its own Jupyter server, which repeats the call to the
gateway with the server's hub token (labextension/jupyterlab_hubgrid/
gatewayroutes.py). The console has no Jupyter server: its page is the
service's, logged in through the hub's OAuth, and the access token the hub
gave the service for that user is in the service's login cookie (signed,
HttpOnly: the page's scripts cannot read it). This handler repeats the
call to the gateway (``HubgridService.gateway_url``) with that very token
(``Authorization: token <the caller's OAuth token>``), so:

- the page holds no credential (nothing is handed to its scripts);
- the gateway sees the caller's own hub token and, as for a Lab's, asks the
  hub whether it is still good and the service which endpoints that user
  may call: nobody gets more than they could call with their own token;
- the cookie counts only with the page's ``_xsrf`` token (HubOAuth's check,
  as for every console call): another site cannot chat in the user's name.

Only what the Chat page calls is forwarded: ``GET v1/models`` and
``POST v1/chat/completions``; any other path is a 404. A keypair caller has
no hub token for the gateway (403: call the gateway with an endpoint token
or a hub token). The answer is streamed to the browser as the gateway
writes it (a streamed chat's server-sent events arrive chunk by chunk); an
unreachable gateway is a 502, no ``gateway_url`` a 503. Only refusals go to
the access log: the chat itself is the gateway's to count.

The Lab's forward (labextension/jupyterlab_hubgrid/gatewayroutes.py, over
its ``routes.ForwardHandler``) has the same shape and the same streaming
headers, and stays a copy on purpose: it ships in the lab extension's own
distribution, installed into session images where none of the service's
code is, and the service imports nothing of the lab extension. What they
forward differs too: the Lab's, every gateway path with its server's hub
token; this one, the Chat's two paths with the caller's own login.
"""

from __future__ import annotations

from tornado import httpclient

from ..core.errors import BadGateway, Denied, NotFound, Unavailable
from .base import APIHandler

#: the gateway's paths the console forwards, by verb (the Chat page's calls)
FORWARDED = {"GET": ("v1/models",), "POST": ("v1/chat/completions",)}
#: request headers passed on (never the browser's cookies or credentials)
REQUEST_HEADERS = ("Content-Type", "Accept")
#: answer headers passed back
ANSWER_HEADERS = ("Content-Type",)
#: seconds to connect to the gateway (an answer may stream for minutes)
CONNECT_TIMEOUT = 10.0


def forwarded_path(method: str, path: str) -> str | None:
    """The gateway path to call for ``method path``; None for one the
    console does not forward."""
    return path if path in FORWARDED.get(method, ()) else None


class ConsoleGatewayHandler(APIHandler):
    resource = "gateway"

    async def get(self, path):
        """The models the caller may chat with (the gateway's ``v1/models``)."""
        await self.forward(path)

    async def post(self, path):
        """A chat completion (the gateway's ``v1/chat/completions``), streamed back."""
        await self.forward(path)

    def caller_token(self) -> str:
        """The caller's own hub token: the OAuth token in the login cookie
        (or the one in the Authorization header); never a keypair."""
        token = self.hub_auth.get_token(self) if self._credential == "token" else None
        if not token:
            raise Denied("the console's Chat calls the gateway with your hub login; a keypair "
                         "is not one: call the gateway with a hub or endpoint token")
        return token

    async def forward(self, path: str) -> None:
        method = self.request.method
        gw_path = forwarded_path(method, path)
        if gw_path is None:
            raise NotFound(f"the console forwards only {', '.join(sorted(FORWARDED))} of the "
                         "gateway's v1/models and v1/chat/completions")
        base = self.gateway_url
        if not base:
            raise Unavailable("the serving gateway is not configured on the service: "
                              "HUBGRID_GATEWAY_URL (c.HubgridService.gateway_url)")
        headers = {k: v for k in REQUEST_HEADERS if (v := self.request.headers.get(k))}
        headers["Authorization"] = f"token {self.caller_token()}"
        started = False

        def header_line(line: str) -> None:
            nonlocal started
            if line.startswith("HTTP/"):
                parts = line.split(" ", 2)
                self.set_status(int(parts[1]))
                return
            name, sep, value = line.partition(":")
            if sep and name.strip() in ANSWER_HEADERS:
                self.set_header(name.strip(), value.strip())
            if not line.strip() and not started:
                started = True
                self.set_header("Cache-Control", "no-cache")
                self.set_header("X-Accel-Buffering", "no")
                self.flush()  # the status now: the first token may take a while

        def chunk(data: bytes) -> None:
            self.write(data)
            self.flush()

        request = httpclient.HTTPRequest(
            base.rstrip("/") + "/" + gw_path, method=method, headers=headers,
            body=self.request.body if method == "POST" else None, follow_redirects=False,
            connect_timeout=CONNECT_TIMEOUT, request_timeout=0, decompress_response=False,
            header_callback=header_line, streaming_callback=chunk)
        try:
            await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        except OSError as e:
            if started:
                raise
            raise BadGateway(f"the serving gateway cannot be reached: {e}") from None
        self.finish()

    def audit_record(self):
        # a refusal only: the chat itself is the gateway's to count
        if self.get_status() in (401, 403):
            return super().audit_record()
        return None
