"""The live bridge of `sessiondag view`: the report's viewer served on 127.0.0.1, kept current by the
daemon's notifications.

Why a small HTTP bridge and not JSON-RPC over a WebSocket: the viewer only reads (a document, its
chunks) and needs to hear that something changed — `fetch` and `EventSource` (server-sent events)
do both with no framing code, no dependency and no new daemon transport. The browser never holds a
JSON-RPC channel, so a page (or anything else that reaches the port) cannot call a writing method:
the bridge is read-only by construction. The bridge itself is a client of the daemon like any other
(sessiondag_client over the daemon's socket): it subscribes to the session, and when a change is
announced it patches the data document (live.py: the file's document, kept current) and sends the
page the patch; streamed model text goes the same way.

Access: the server binds 127.0.0.1 only (port 0). The URL carries a one-time token; its first use
sets an HttpOnly, SameSite=Strict cookie and redirects to `/` (the token leaves the address bar and
cannot be used again). Every request needs that cookie (401 otherwise) and a Host header naming
the loopback address (403 otherwise: no DNS rebinding).

    GET /?token=T     → 303 to / with the cookie (once)      GET /doc        the document (no chunks)
    GET /             → the viewer page                        GET /chunk/N    one chunk of bodies
    GET /events?since=V → text/event-stream: the `patch`es after the document's version V, then
                        each as it is made (`id:` its version, so a reconnect resumes), or `reset`
"""

from __future__ import annotations

import hmac
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import orjson

from .html import page
from .live import LiveDocument

COOKIE = "sdview"
KEEPALIVE_S = 15.0


class Bridge(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, live: LiveDocument, title: str):
        super().__init__(("127.0.0.1", 0), Handler)
        self.live, self.title = live, title
        self.token = secrets.token_urlsafe(32)
        self.cookie = secrets.token_urlsafe(32)
        self.token_used = False
        self.lock = threading.Lock()
        self.hosts = {f"127.0.0.1:{self.server_port}", f"localhost:{self.server_port}"}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/?token={self.token}"

    def take_token(self, token: str) -> bool:
        with self.lock:
            if self.token_used or not hmac.compare_digest(token.encode(), self.token.encode()):
                return False
            self.token_used = True
            return True

    def close(self) -> None:
        self.live.close()
        self.shutdown()
        self.server_close()


class Handler(BaseHTTPRequestHandler):
    server: Bridge
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass   # nothing on stdout/stderr per request: `view` prints its URL and errors only

    def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8", **headers: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode(), self.server.cookie.encode()):
                return True
        return False

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        if self.headers.get("Host") not in self.server.hosts:
            return self._send(403, b"forbidden: this viewer answers on its loopback address only\n")
        url = urlsplit(self.path)
        token = parse_qs(url.query).get("token")
        if url.path == "/" and token:
            if not self.server.take_token(token[0]):
                return self._send(401, b"this link was already used or is wrong: run `sessiondag view` again\n")
            return self._send(303, b"", Location="/",
                              Set_Cookie=f"{COOKIE}={self.server.cookie}; HttpOnly; SameSite=Strict; Path=/")
        if not self._authorized():
            return self._send(401, b"unauthorized: open the URL `sessiondag view` printed\n")
        if url.path == "/":
            html = page(None, title=self.server.title, live={"base": "/"})
            return self._send(200, html.encode(), "text/html; charset=utf-8")
        if url.path == "/doc":
            return self._send(200, self.server.live.doc_bytes(), "application/json")
        if url.path.startswith("/chunk/") and url.path[7:].isdigit():
            body = self.server.live.chunk_bytes(int(url.path[7:]))
            if body is None:
                return self._send(404, b"no such chunk\n")
            return self._send(200, body, "application/json")
        if url.path == "/events":
            since = self.headers.get("Last-Event-ID") or (parse_qs(url.query).get("since") or [""])[0]
            if not since.isdigit():
                return self._send(400, b"events need ?since=VERSION (the document's)\n")
            return self._events(int(since))
        return self._send(404, b"not found\n")

    def _events(self, seen: int) -> None:
        """The patches after version `seen`, then each as it is made (live.py)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.close_connection = True
        live = self.server.live
        try:
            self.wfile.write(b": connected\n\n")
            self.wfile.flush()
            while not live.closed:
                seen, events = live.since(seen, KEEPALIVE_S)
                self.wfile.write(b"".join(events) if events else b": keepalive\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
