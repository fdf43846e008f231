"""What `sessiondag run` shows on stderr while a turn runs: the streamed text, tool calls and their
results — and, on a terminal only (never with --json or when stderr is not a tty), a status line
with a spinner, what is running (the model or a tool), the elapsed time and the tokens so far."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Mapping, TextIO

import orjson

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
CLEAR = "\r\x1b[K"
# daemon/will_stop's reason, as the CLI's chat and run say it
STOP_REASONS = {"stop": "`sessiondag daemon stop`", "signal": "it got a signal", "idle": "idle timeout",
                "stdio_closed": "its client went away"}
IDLE = 0.8  # seconds without output mid-line before the status shows after the text


class Progress:
    def __init__(self, out: TextIO | None = None, *, status_line: bool = False):
        self.out = out or sys.stderr
        self.streamed: list[str] = []
        self.status_line = status_line
        self.lock = threading.Lock()
        self.at_bol = True          # the cursor is at the start of a line (a status line may be drawn)
        self.drawn = False          # a status line is on screen
        self.phase: str | None = None
        self.phase_started = 0.0
        self.started = time.monotonic()
        self.tokens = [0, 0]
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self.paused = False
        self.last_output = time.monotonic()

    # --- the plain stream ----------------------------------------------------------------------
    def _clear(self) -> None:
        if self.drawn:  # a status on a line of its own, or after a line still streaming
            self.out.write(CLEAR if self.at_bol else "\x1b[K")
            self.drawn = False

    def _write(self, s: str) -> None:
        self._clear()
        self.out.write(s)
        if s:
            self.at_bol = s.endswith("\n")
            self.last_output = time.monotonic()

    def __call__(self, kind: str, data: Mapping[str, Any]) -> None:  # agent/did_update params (JSON)
        with self.lock:
            self._event(kind, data)
            self._draw()
            self.out.flush()

    def _event(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "text_delta":  # the phase goes on: a stream that stalls mid-line shows it again
            self._write(data["delta"])
            self.streamed.append(data["delta"])
        elif kind == "tool_call":
            n = data["node"]
            self._write(("" if self.at_bol else "\n") + f"→ {n['name']}({orjson.dumps(n.get('input')).decode()[:200]})\n")
            if n["name"] != "ask_user":  # its question is on the terminal: no status line over it
                self._phase(f"tool {n['name']}")
        elif kind == "node_appended":
            n = data["node"]
            if n["role"] == "llm" and n["status"] == "running":
                self._phase(f"model {n['name']}")
            elif (n.get("metadata") or {}).get("source") == "task_followup":
                self._write(f"\n[follow-up] {str(n.get('output'))[:200]}\n")
        elif kind == "node_updated":
            n = data["node"]
            md = n.get("metadata") or {}
            if n["role"] == "code" and n["status"] != "running" and "tool_call_id" in md:
                self.phase = None
                self._write(f"← {n['name']}: {n['status']}\n")
            elif n["role"] == "llm" and n["status"] in ("completed", "error", "cancelled"):
                self.phase = None
                self.tokens[0] += int(md.get("gen_ai.usage.input_tokens") or 0)
                self.tokens[1] += int(md.get("gen_ai.usage.output_tokens") or 0)
                self._write("\n")
        elif kind == "retry":
            self._write(("" if self.at_bol else "\n")
                        + f"retrying in {data.get('delay', 0):.1f}s (attempt {data.get('attempt')}): {data.get('reason')}\n")
        elif kind == "daemon_stopping":
            why = STOP_REASONS.get(data.get("reason") or "")
            self._write(("" if self.at_bol else "\n") + "the daemon is stopping" + (f" ({why})" if why else "")
                        + ": the turn is cancelled\n")
        elif kind in ("turn_finished", "turn_committed"):
            self.phase = None

    def pause(self) -> None:
        """A question is asked on the terminal: no status line over it until `resume`."""
        with self.lock:
            self._clear()
            if not self.at_bol:
                self.out.write("\n")
                self.at_bol = True
            self.out.flush()
            self.paused = True

    def resume(self) -> None:
        with self.lock:
            self.paused = False

    # --- the status line -----------------------------------------------------------------------
    def _phase(self, label: str) -> None:
        self.phase = label
        self.phase_started = time.monotonic()

    def _draw(self) -> None:
        """At the start of a line: the status line. Mid-line (the model stopped streaming for
        IDLE seconds): the status after the text, the cursor saved and put back where the text goes on."""
        if not self.status_line or self.phase is None or self.paused:
            return
        now = time.monotonic()
        if not self.at_bol and now - self.last_output < IDLE:
            return
        spin = SPINNER[int(now * 10) % len(SPINNER)]
        status = (f"{spin} {self.phase} · {now - self.phase_started:.1f}s · "
                  f"{self.tokens[0]} in / {self.tokens[1]} out · {now - self.started:.0f}s total")
        self.out.write(f"{CLEAR}{status}" if self.at_bol else f"\x1b7  \x1b[2m{status}\x1b[0m\x1b8")
        self.drawn = True

    def _tick(self) -> None:
        while not self._stop.wait(0.1):
            with self.lock:
                self._draw()
                self.out.flush()

    def __enter__(self) -> "Progress":
        if self.status_line:
            self._ticker = threading.Thread(target=self._tick, name="sessiondag-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self.lock:
            self._clear()
            self.out.flush()


def progress_for(json_mode: bool) -> Progress:
    return Progress(status_line=not json_mode and sys.stderr.isatty())
