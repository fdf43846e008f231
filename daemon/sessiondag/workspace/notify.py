"""The one place that touches watchfiles' private `RustNotify` (pyproject.toml bounds watchfiles to
the minor versions this was checked against).

`awatch` hides when the watch is in place; `RestartableWatch` needs to know (the watch holds once the
constructor returns), so it drives the Rust watcher directly, through this adapter: named arguments
instead of positional flags, and changes as `(watchfiles.Change, path)` pairs.
"""

from __future__ import annotations

import errno
import os
from typing import Literal, Protocol

from watchfiles import Change
from watchfiles._rust_notify import RustNotify

Changes = set[tuple[Change, str]]


class StopEvent(Protocol):
    def is_set(self) -> bool: ...


class Notifier:
    """A running watch over `paths`. Stop it with `close()` or by leaving its `with` block.

    Every path must exist: FileNotFoundError otherwise. (With `ignore_permission_denied` the Rust
    watcher skips a missing path without a word — watchfiles 1.3 — so the paths are checked once the
    watch is in place: one that vanished before it could be watched is reported, not lost.)"""

    def __init__(self, paths: list[str], *, recursive: bool, ignore_permission_denied: bool = True,
                 force_polling: bool = False, poll_delay_ms: int = 300, debug: bool = False):
        self._rust = RustNotify(paths, debug, force_polling, poll_delay_ms, recursive, ignore_permission_denied)
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            self._rust.close()
            raise FileNotFoundError(errno.ENOENT, "a watched path is missing", missing[0])

    def wait(self, *, debounce_ms: int, step_ms: int, timeout_ms: int = 0,
             stop: StopEvent | None = None) -> Changes | Literal["signal", "stop", "timeout"]:
        """Block (release the GIL in `step_ms` sleeps) until changes come — grouped for at most
        `debounce_ms` — or `stop` is set ('stop'), or `timeout_ms` passed ('timeout'; 0: never), or a
        signal arrived ('signal')."""
        raw = self._rust.watch(debounce_ms, step_ms, timeout_ms, stop)
        if isinstance(raw, str):
            return raw
        return {(Change(c), p) for c, p in raw}

    def close(self) -> None:
        self._rust.close()

    def __enter__(self) -> "Notifier":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
