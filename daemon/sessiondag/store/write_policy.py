"""The write policy a session records: the settings whose effect is written into the session and
that every writer must therefore share — `node_spill` (which fields are stored as blobs) and
`tool_aging_tail_turns` (where a commit moves the aging boundary).

The session's first write records the writing process's values as session meta `write_policy`
(journaled like any meta, so every process sees it on its next read, and saved in each commit).
From then on the record wins: every process writing the session spills and ages by it, whatever its
own settings say, so two processes with different environments never write one session two ways.
A process whose own value was set on purpose (config file, environment, flag) and differs from the
record is told so in its log, once per session; `sessiondag config --session ID` shows the record.
A new policy takes a new session.
"""

from __future__ import annotations

import logging
from typing import Callable, Mapping

from ..core import switches as sw
from ..core.model import Call
from ..core.errors import ConfigError
from ..core.settings import WRITE_POLICY_FIELDS, WRITE_POLICY_KEY, Settings, WritePolicy
from .spill import spills

KEY = WRITE_POLICY_KEY
log = logging.getLogger("sessiondag.store")


def recorded(extra: Mapping[str, object], session_id: str = "") -> WritePolicy | None:
    """The session's recorded policy (None: nothing recorded yet); a damaged record raises ConfigError."""
    rec = extra.get(KEY)
    if rec is None:
        return None
    label = f"session {session_id} {KEY}"
    if not isinstance(rec, dict):
        raise ConfigError(label, sw.shown(rec), "an object")
    spill = rec.get("node_spill")
    return {"node_spill": None if spill is None else sw.parse_int(f"{label}.node_spill", spill, 1),
            "tool_aging_tail_turns": sw.parse_int(f"{label}.tool_aging_tail_turns",
                                                  rec.get("tool_aging_tail_turns"), 0)}


def disagreements(policy: WritePolicy, settings: Settings) -> list[tuple[str, object, object, str]]:
    """(name, recorded, this process's, where it was set) for each value set on purpose that differs."""
    out: list[tuple[str, object, object, str]] = []
    for name in WRITE_POLICY_FIELDS:
        src = settings.source(name)
        mine = getattr(settings, name)
        if src.kind != "default" and mine != policy[name]:
            out.append((name, policy[name], mine, str(src)))
    return out


class PolicyWarnings:
    """Logs each disagreement of this process with a session's record once."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, object]] = set()   # (name, this process's value): a setting's, hashable

    def check(self, session_id: str, policy: WritePolicy, settings: Settings) -> None:
        for name, theirs, mine, where in disagreements(policy, settings):
            if (name, mine) in self.seen:
                continue
            self.seen.add((name, mine))
            log.warning("session %s records %s=%r; this process's %r (%s) is not used for it "
                        "(the session's write policy wins; docs/settings.md)", session_id, name, theirs, mine, where)


class SessionPolicy:
    """One session's write policy as its write path reads it (`Session.policy`): the record parsed
    once per value recorded, the first write recording this process's, and its log warnings.
    `meta` returns the session meta as its caller sees it (holding the lock, caught up)."""

    def __init__(self, session_id: str, meta: Callable[[], Mapping[str, object]]) -> None:
        self.id = session_id
        self.meta = meta
        self.warnings = PolicyWarnings()
        self._cached: tuple[object, WritePolicy] | None = None  # (the recorded meta value, parsed)

    def get(self, extra: Mapping[str, object], settings: Settings | None,
            own: Callable[[], Settings], record: Callable[[dict[str, object]], object]) -> WritePolicy:
        """The policy recorded in the session meta `extra`; if none is, this process's (`settings`,
        else `own()`) recorded through `record` (a journal record). The session's caller holds
        its lock, caught up. The cache holds the very object the graph's meta holds (a record a
        catch-up replaced is parsed again), so an append reads no settings once the policy is
        recorded; `settings` (a commit's) is checked against the record for the log's warning."""
        rec = extra.get(KEY)
        cached = self._cached
        if cached is not None and rec is not None and cached[0] is rec:
            if settings is not None:
                self.warnings.check(self.id, cached[1], settings)
            return cached[1]
        settings = settings or own()
        policy = recorded(extra, self.id)
        if policy is None:
            policy = settings.write_policy()
            record({"m": KEY, "v": policy})
            rec = extra.get(KEY)
        else:
            self.warnings.check(self.id, policy, settings)
        self._cached = (rec, policy)
        return policy

    def known(self, extra: Mapping[str, object]) -> WritePolicy | None:
        """The recorded policy without writing one: None while none is recorded or the record is
        damaged (a write raises the typed error). Parsed once per value recorded, as in `get`."""
        rec = extra.get(KEY)
        cached = self._cached
        if cached is not None and rec is not None and cached[0] is rec:
            return cached[1]
        try:
            policy = recorded(extra, self.id)
        except ConfigError:
            return None
        if policy is not None:
            self._cached = (rec, policy)
        return policy

    def spills(self, call: Call) -> bool:
        """Would appending `call` now store a blob? True while no policy is recorded (the first write
        records one). Caller holds the session lock, caught up."""
        policy = self.known(self.meta())
        return policy is None or spills(call, policy["node_spill"])
