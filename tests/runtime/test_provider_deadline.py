"""A provider call has an overall deadline besides the read timeout (issue 19 item 17): a real
loopback HTTP server that opens the stream and then sends only `: keep-alive` comments every 0.2 s
(each one resets the read timeout) must not keep the call, and so the turn, past its deadline."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sessiondag.runtime.providers import make_provider
from sessiondag.runtime.providers.base import ProviderError

pytestmark = pytest.mark.network   # loopback network (tests/tiers.py)

NEVER = lambda: False  # noqa: E731


class KeepAliveServer:
    def __init__(self):
        self.gone = threading.Event()  # the client closed the stream
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for _ in range(300):  # bounded: a minute at most
                    try:
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                    except OSError:
                        break
                    if outer.gone.wait(0.2):
                        break
                outer.gone.set()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.gone.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("kind,path", [("openai", "/v1"), ("anthropic", "")])
def test_keep_alive_comments_do_not_outlive_the_deadline(kind, path):
    srv = KeepAliveServer()
    try:
        p = make_provider({"provider": kind, "base_url": f"http://127.0.0.1:{srv.port}{path}", "api_key": "k",
                           "model": "m", "timeout": 1.0, "deadline": 2.0, "max_retries": 0})
        assert p.deadline == 2.0
        with pytest.raises(ProviderError, match="deadline"):
            p.complete([{"role": "user", "content": "x"}], [], on_text=lambda d: None, cancelled=NEVER)
    finally:
        srv.close()
