"""A real Chromium driven over the DevTools protocol (CDP), for the report tests and bench.

Debian's chromium (installed by mk/vscode.mk / mk/report.mk) runs headless with its own temporary
profile and `--remote-debugging-port=0`; the port is read from the DevToolsActivePort file it
writes, and one page target is driven over a WebSocket (the `websockets` package). Every network
request the page makes is recorded (`requests`), so a test can prove a report fetched nothing.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from setup_check import setup_failed
from waiting import wait_until

CHROMIUM = os.environ.get("SESSIONDAG_CHROMIUM", "/usr/bin/chromium")


def chromium_path() -> str:
    path = shutil.which(CHROMIUM) or CHROMIUM
    if not os.access(path, os.X_OK):
        setup_failed(f"chromium at {CHROMIUM} (Debian's, mk/report.mk installs it from apt)", "report-browser")
    return path


class Browser:
    def __init__(self, tmp: Path, *, width: int = 1400, height: int = 900):
        self.profile = tmp / "chromium-profile"
        self.profile.mkdir(parents=True, exist_ok=True)
        args = [chromium_path(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--metrics-recording-only",
                "--allow-file-access-from-files", f"--window-size={width},{height}",
                f"--user-data-dir={self.profile}", "--remote-debugging-port=0", "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = self.profile / "DevToolsActivePort"

        def port() -> int | None:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited: {self.proc.stderr.read().decode(errors='replace')[-2000:]}")
            try:
                first = port_file.read_text().split("\n")[0]
            except OSError:
                return None
            return int(first) if first.strip() else None
        self.port = wait_until(port, "chromium to open its DevTools port", timeout=30, interval=0.02)

    def page(self) -> "Page":
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t["type"] == "page")
        return Page(page["webSocketDebuggerUrl"])

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


class CdpError(RuntimeError):
    pass


class Page:
    def __init__(self, ws_url: str):
        self.ws = connect(ws_url, max_size=None, open_timeout=10)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Network.enable")

    @property
    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    @property
    def console_errors(self) -> list[str]:
        out = []
        for e in self.events:
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(json.dumps(e["params"]["exceptionDetails"])[:2000])
            elif e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error":
                out.append(json.dumps(e["params"]["args"])[:2000])
        return out

    def send(self, method: str, timeout: float = 60, **params: Any) -> dict[str, Any]:
        i = next(self.ids)
        self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if msg.get("id") == i:
                if "error" in msg:
                    raise CdpError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def eval(self, expr: str, timeout: float = 60) -> Any:
        r = self.send("Runtime.evaluate", timeout=timeout, expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise CdpError(f"{expr[:200]}: {json.dumps(r['exceptionDetails'])[:2000]}")
        return r["result"].get("value")

    def wait(self, expr: str, timeout: float = 30) -> Any:
        return wait_until(lambda: self.eval(f"!!({expr})"), f"true in the page: {expr}", timeout=timeout,
                          interval=0.02)

    def offline(self) -> None:
        self.send("Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1,
                  uploadThroughput=-1)

    def goto(self, url: str, ready: str = "document.body && document.body.dataset.ready") -> None:
        self.send("Page.navigate", url=url)
        self.wait(ready)

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the first element matching `selector` (scrolled into view)."""
        box = self.eval(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: 'center', inline: 'center'}});
            const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
        if box is None:
            raise CdpError(f"no element matches {selector}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def type(self, text: str) -> None:
        self.send("Input.insertText", text=text)

    def key(self, key: str, code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.ws.close()
