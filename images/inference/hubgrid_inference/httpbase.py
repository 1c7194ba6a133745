"""The HTTP side shared by hubgrid's inference servers (stdlib only).

A server listens on 127.0.0.1:PORT (the ``service.port`` of the model
definition: probes and clients inside the replica use it) and, when
``--unix PATH`` or the environment variable ``HUBGRID_SERVICE_SOCKET`` names
one, also on a Unix socket: an isolated replica (``--network none``) is
reached by hubgrid through a socket in a directory mounted into it, as
isolated Jupyter sessions are. Requests and answers are JSON in OpenAI's
shapes, errors too (``{"error": {"message", "type", "param", "code"}}``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import ThreadingMixIn, UnixStreamServer

#: the largest request body read (bytes)
MAX_BODY = 1 << 20


class ApiError(Exception):
    """An answer in OpenAI's error shape."""

    def __init__(self, status: int, message: str, *, type_: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = (
            status, message, type_, param, code)

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}


class Handler(BaseHTTPRequestHandler):
    """Routes ``(method, path)`` to the app's functions.

    ``app.routes``: {(method, path): fn(handler, body) -> dict | None}; a
    function that streams writes its answer itself and returns None.
    """

    protocol_version = "HTTP/1.1"
    server_version = "hubgrid-inference"
    app = None  # set on the subclass made by serve()

    def log_message(self, fmt, *args):  # one line per request on stderr
        sys.stderr.write("%s %s\n" % (self.app.name, fmt % args))

    def address_string(self):
        return self.client_address[0] if isinstance(self.client_address, tuple) else "unix"

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        body_unread = bool(self.headers.get("Content-Length") not in (None, "", "0")
                           or self.headers.get("Transfer-Encoding"))
        try:
            fn = self.app.routes.get((method, path))
            if fn is None:
                if any(p == path for _, p in self.app.routes):
                    raise ApiError(405, f"{method} is not allowed on {path}")
                # said so that a caller who picked the wrong kind of model
                # (chat with an embeddings server) learns what this one does
                served = ", ".join(sorted({p for _, p in self.app.routes}))
                raise ApiError(404, f"{self.app.name} serves no {path} (it serves {served})",
                               code="not_found")
            body = self._read_json() if method == "POST" else None
            body_unread = False
            answer = fn(self, body)
            if answer is not None:
                self.send_json(200, answer)
        except ApiError as e:
            if body_unread:
                # a refusal before the body was read (no route, a method
                # not allowed) would leave it in the stream, to be read as
                # the next request's first line on this connection
                self.close_connection = True
            self.send_json(e.status, e.body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # noqa: BLE001 - the server keeps serving; the client learns why
            sys.stderr.write(f"{self.app.name}: {type(e).__name__}: {e}\n")
            self.send_json(500, ApiError(500, "internal error", type_="server_error").body())

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def _read_json(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise ApiError(400, "bad Content-Length") from None
        if length > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, f"the request body is over {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "the request body is not JSON") from None
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return body

    def send_json(self, status: int, payload) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        """Begin a server-sent event stream (the connection closes at its end)."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

    def send_event(self, payload) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()


class _UnixHTTPServer(ThreadingMixIn, UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        conn, _ = self.socket.accept()
        return conn, ("unix", 0)


def arguments(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--host", default="127.0.0.1", help="TCP address (default 127.0.0.1)")
    p.add_argument("--port", type=int, required=True, help="TCP port (service.port)")
    p.add_argument("--unix", default=os.environ.get("HUBGRID_SERVICE_SOCKET") or None,
                   help="also listen on this Unix socket (default: $HUBGRID_SERVICE_SOCKET)")
    return p


def serve(app, args) -> None:
    """Serve ``app`` on ``args.host:args.port`` (and ``args.unix``) until killed."""
    handler = type("AppHandler", (Handler,), {"app": app})
    servers = [ThreadingHTTPServer((args.host, args.port), handler)]
    if args.unix:
        try:
            os.unlink(args.unix)
        except FileNotFoundError:
            pass
        servers.append(_UnixHTTPServer(args.unix, handler))
        os.chmod(args.unix, 0o660)
    where = f"http://{args.host}:{args.port}" + (f" and unix:{args.unix}" if args.unix else "")
    sys.stderr.write(f"{app.name}: serving {app.model} on {where}\n")
    sys.stderr.flush()
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        servers[0].serve_forever()
    except KeyboardInterrupt:
        pass

