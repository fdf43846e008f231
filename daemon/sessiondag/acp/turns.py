"""Per-session state of the adapter: the translator, the running prompt, remembered permissions.

A prompt is answered when the daemon's turn has finished (its `turn_finished` event was forwarded,
so every update precedes the answer) and the sub-agents it spawned have reported back through their
follow-up turns — or at once when the client cancels."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, Callable

from .forks import Fork
from .updates import Translator


@dataclass
class Turn:
    cancelled: bool = False
    finished: set[str] = field(default_factory=set)   # user node ids whose turn_finished was seen
    pending_subagents: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def bump(self) -> None:
        self.changed.set()

    async def wait_until(self, pred: Callable[[], bool], *, until_cancelled: bool = True) -> None:
        while not ((until_cancelled and self.cancelled) or pred()):
            self.changed.clear()
            await self.changed.wait()


@dataclass
class SessionState:
    session_id: str                                    # the ACP id: the daemon's session id, or a fork's
    cwd: str
    view: Translator
    fork: Fork | None = None                           # a fork's branch (name, point, tip)
    turn: Turn | None = None
    always: set[str] = field(default_factory=set)      # tools the user allowed for this session
    mode: str = "ask"                                  # session/set_mode (modes.py)
    model_choice: str = "default"                      # session/set_config_option (config_options.py)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    def create(cls, session_id: str, cwd: str, context_window: int, fork: Fork | None = None) -> "SessionState":
        return cls(session_id, cwd, Translator(session_id, cwd, context_window), fork)

    @property
    def sid(self) -> str:
        """The daemon's session id (a fork is a branch of it)."""
        return self.fork.sid if self.fork is not None else self.session_id

    def tip(self) -> str | None:
        """Where this ACP session's prompts continue: a fork's own tip; None: the daemon's HEAD."""
        return self.fork.tip if self.fork is not None else None

    def on_turn_finished(self, result: Mapping[str, Any]) -> None:
        """`result`: a turn_finished event's, read with .get as routing.py reads its notification."""
        t = self.turn
        uid = result.get("user_node_id")
        if t is None:
            return
        if uid in self.view.followups:
            t.pending_subagents = max(0, t.pending_subagents - 1)
        if uid:
            t.finished.add(uid)
        t.bump()
