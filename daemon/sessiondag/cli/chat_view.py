"""What `sessiondag chat` prints: the streamed reply as markdown, line by line (headings, lists,
emphasis, inline code, fenced code blocks), tool calls as one line while they run that collapses to
its result when done, and a status line (spinner, what runs, elapsed time) whenever nothing has
streamed for a moment. Everything goes to the terminal's own scrollback: nothing is redrawn but the
last line.

The view is fed the daemon's `agent/did_update` events (the same for this client's turns and for
turns other clients run in the session) and writes through `out` (prompt_toolkit's patched stdout
while a prompt is shown, so live output lands above it)."""

from __future__ import annotations

import re
import sys
import threading
import time
from typing import Any, Mapping, TextIO

import orjson

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
CLEAR = "\r\x1b[K"
UP_CLEAR = "\x1b[1A\r\x1b[K"
BOLD, DIM, CYAN, GREEN, RED, YELLOW, RESET = "\x1b[1m", "\x1b[2m", "\x1b[36m", "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[0m"
IDLE = 0.8  # seconds without output before the status line shows

_INLINE = [(re.compile(r"`([^`]+)`"), CYAN + r"\1" + RESET),
           (re.compile(r"\*\*([^*]+)\*\*"), BOLD + r"\1" + RESET),
           (re.compile(r"(?<![*\w])\*([^*\s][^*]*)\*(?!\*)"), "\x1b[3m" + r"\1" + RESET)]


def markdown_line(line: str, in_code: bool) -> tuple[str, bool]:
    """(the line formatted for a terminal, whether a code block is open after it)."""
    if line.lstrip().startswith("```"):
        lang = line.strip()[3:].strip()
        return (DIM + ("┌ " + lang if not in_code and lang else "┌" if not in_code else "└") + RESET), not in_code
    if in_code:
        return GREEN + "│ " + line + RESET, True
    m = re.match(r"^(#{1,6})\s+(.*)$", line)
    if m:
        return BOLD + _inline(m.group(2)) + RESET, False
    m = re.match(r"^(\s*)[-*+]\s+(.*)$", line)
    if m:
        return m.group(1) + " • " + _inline(m.group(2)), False
    return _inline(line), False


def _inline(text: str) -> str:
    for rx, sub in _INLINE:
        text = rx.sub(sub, text)
    return text


def tool_label(node: Mapping[str, Any]) -> str:
    args = node.get("input")
    if isinstance(args, dict):
        main = args.get("path") or args.get("command") or args.get("question") or args.get("task")
        shown = str(main) if main is not None else orjson.dumps(args).decode()
    else:
        shown = orjson.dumps(args).decode()
    shown = " ".join(shown.split())
    return f"{node['name']}({shown[:80] + ('…' if len(shown) > 80 else '')})"


def _summary(output: object) -> str:
    text = output if isinstance(output, str) else orjson.dumps(output).decode()
    lines = text.splitlines() or [""]
    first = " ".join(lines[0].split())[:70]
    more = f" … +{len(lines) - 1} lines" if len(lines) > 1 else ""
    return first + more


class ChatView:
    def __init__(self, out: TextIO | None = None):
        self._out = out  # None: sys.stdout at each write (patched while a prompt is shown)
        self.lock = threading.RLock()
        self.pending = ""           # streamed text not yet ended by a newline
        self.in_code = False
        self.last_tool: str | None = None  # the tool line is the last line on screen
        self.tools: dict[str, str] = {}    # running tool node id -> its label
        self.phase: str | None = None      # "thinking", "tool x"
        self.phase_started = 0.0
        self.last_output = time.monotonic()
        self.drawn = False
        self.turn_of: str | None = None    # the client whose turn is shown
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @property
    def out(self) -> TextIO:
        return self._out or sys.stdout

    # --- writing -------------------------------------------------------------------------------
    def write(self, s: str) -> None:
        with self.lock:
            self._clear_status()
            self.out.write(s)
            self.out.flush()
            self.last_output = time.monotonic()

    def line(self, s: str) -> None:
        with self.lock:
            self._flush_pending()
            self.last_tool = None
            self.write(s + "\n")

    def note(self, s: str) -> None:
        self.line(DIM + s + RESET)

    def error(self, s: str) -> None:
        self.line(RED + s + RESET)

    def _end_line(self, line: str) -> None:
        """The streamed line is complete: it is on screen raw; redraw it formatted when it fits on
        one row (a wrapped one stays as it came)."""
        text, self.in_code = markdown_line(line, self.in_code)
        redraw = text != line and len(line) < self.columns()
        self.write((CLEAR + text if redraw else "") + "\n")

    def _flush_pending(self) -> None:
        if self.pending:
            line, self.pending = self.pending, ""
            self._end_line(line)

    def _text(self, delta: str) -> None:
        self.last_tool = None
        self.phase = self.phase and "streaming"
        while delta:
            part, nl, delta = delta.partition("\n")
            if part:
                self._clear_status()  # before the line counts as started: a status on its own row goes
                self.pending += part
                self.write(part)  # shown as it streams
            if nl:
                line, self.pending = self.pending, ""
                self._end_line(line)

    def columns(self) -> int:
        import shutil
        return shutil.get_terminal_size((100, 30)).columns

    # --- events --------------------------------------------------------------------------------
    def event(self, kind: str, p: Mapping[str, Any]) -> None:  # agent/did_update params (JSON)
        with self.lock:
            self._event(kind, p)

    def _event(self, kind: str, p: Mapping[str, Any]) -> None:
        if kind == "text_delta":
            self._text(p.get("delta") or "")
        elif kind == "tool_call":
            n = p["node"]
            self._flush_pending()
            label = tool_label(n)
            self.tools[n["id"]] = label
            self.write(f"{YELLOW}⏺{RESET} {label} …\n")
            self.last_tool = n["id"]
            if n["name"] not in ("ask_user",):
                self._phase(f"{n['name']}")
        elif kind == "node_appended":
            n = p["node"]
            if n["role"] == "llm" and n["status"] == "running":
                self._phase("thinking")
            elif n["role"] == "user" and self.turn_of is not None:
                self._flush_pending()
                self.write(f"{BOLD}› {_summary(n.get('output'))}{RESET}\n")
        elif kind == "node_updated":
            self._updated(p["node"])
        elif kind == "retry":
            self.note(f"retrying in {p.get('delay', 0):.1f}s (attempt {p.get('attempt')}): {p.get('reason')}")
        elif kind == "daemon_stopping":
            self.error("the daemon is stopping: this turn is cancelled")
        elif kind in ("turn_finished", "turn_committed"):
            self._flush_pending()
            self.phase = None

    def _updated(self, n: Mapping[str, Any]) -> None:
        md = n.get("metadata") or {}
        if n["role"] == "code" and "tool_call_id" in md and n["status"] != "running":
            label = self.tools.pop(n["id"], n["name"])
            mark = {"completed": GREEN + "✓", "error": RED + "✗", "cancelled": DIM + "■"}.get(n["status"], "?")
            done = f"{mark}{RESET} {label} {DIM}{_summary(n.get('output'))}{RESET}\n"
            if self.last_tool == n["id"]:  # collapse the running line into its result
                self._clear_status()
                self.out.write(UP_CLEAR)
            self.write(done)
            self.last_tool = None
            self.phase = None
        elif n["role"] == "llm" and n["status"] in ("completed", "error", "cancelled"):
            self._flush_pending()
            self.phase = None

    # --- the status line -----------------------------------------------------------------------
    def _phase(self, label: str) -> None:
        self.phase = label
        self.phase_started = time.monotonic()

    def _clear_status(self) -> None:
        if self.drawn:
            self.out.write("\x1b[K" if self.pending else CLEAR)  # mid-line: what follows the text
            self.drawn = False

    def _draw(self) -> None:
        """The status after the cursor: on a line of its own, or after a line still streaming
        (cursor saved and restored, so the text goes on where it stopped)."""
        now = time.monotonic()
        if self.phase is None or now - self.last_output < IDLE:
            return
        spin = SPINNER[int(now * 10) % len(SPINNER)]
        status = f"{DIM}{spin} {self.phase} · {now - self.phase_started:.0f}s · Ctrl-C cancels{RESET}"
        if self.pending:
            room = self.columns() - len(self.pending) % self.columns() - 2
            if room < 20:
                return
            self.out.write(f"\x1b7  {status}\x1b8")
        else:
            self.out.write(f"{CLEAR}{status}")
        self.out.flush()
        self.drawn = True

    def _tick(self) -> None:
        while not self._stop.wait(0.2):
            with self.lock:
                self._draw()

    def start(self) -> None:
        """A turn begins: the status line may show from now on."""
        self._stop.clear()
        self.phase = "waiting"
        self.phase_started = self.last_output = time.monotonic()
        self._ticker = threading.Thread(target=self._tick, name="sessiondag-chat-status", daemon=True)
        self._ticker.start()

    def stop(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self.lock:
            self._flush_pending()
            self._clear_status()
            self.phase = None
            self.out.flush()
