"""What a `Session` tells its listeners: typed change events, one small frozen dataclass per kind.

    s.add_listener(fn)        # fn(session, events): a list of the events below, in order
    s.remove_listener(fn)

A listener is called after the change is applied to the in-memory graph and (for writes) durable,
in the thread that made or noticed it, holding the session lock: it must be quick and must not call
back into the session (queue the work instead). One call carries one batch: the records of one
write (`append_many`: all of its nodes), or everything read while catching up with other processes.

`foreign` is True for what this process read from disk rather than wrote itself: records another
process wrote (seen on the next read, `Session.refresh()` or a write), and the records replayed
after a `Reloaded` (the graph was rebuilt from disk: another process rotated the journal past what
we could follow, or a failed write was dropped). Listeners that cache derived state reset on
`Reloaded`. Nothing outside `store/` decodes journal records: this module is the only translation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union


@dataclass(frozen=True, slots=True)
class NodeAppended:
    """A node was added; `node` is its stored dict (Call.to_dict(): id, seq, role, edges, body)."""

    node: dict[str, Any]
    foreign: bool = False

    @property
    def node_id(self) -> str:
        return str(self.node["id"])


@dataclass(frozen=True, slots=True)
class NodeUpdated:
    """A node's output / status changed or metadata was merged: `fields` as given to update."""

    node_id: str
    fields: dict[str, Any]
    foreign: bool = False


@dataclass(frozen=True, slots=True)
class HeadMoved:
    """The session's head was checked out to `head_id`."""

    head_id: str
    foreign: bool = False


@dataclass(frozen=True, slots=True)
class BranchNamed:
    """The branch whose tip is `head_id` was named (`name` None: the name was removed)."""

    head_id: str
    name: str | None
    foreign: bool = False


@dataclass(frozen=True, slots=True)
class MetaChanged:
    """Session meta `key` was set (`value` None: deleted)."""

    key: str
    value: object   # a session meta value (any JSON; the key's owner reads it)
    foreign: bool = False


@dataclass(frozen=True, slots=True)
class BranchSpawned:
    """`spawn_branch` opened a clean-context branch: its root node (already announced by a
    NodeAppended) and the node that spawned it. Only this process's own spawns."""

    root_id: str
    caller: str
    source: str
    name: str | None


@dataclass(frozen=True, slots=True)
class TurnCommitted:
    """A turn was folded into git commit `sha` (turn number `turn`) by this process."""

    sha: str
    turn: int


@dataclass(frozen=True, slots=True)
class FilesRestored:
    """The working dir's files were put back to checkpoint `checkpoint` (of node `node_id`; None:
    an undo) by this process; `paths` changed (docs/checkpoints.md)."""

    node_id: str | None
    checkpoint: str
    paths: list[str]


@dataclass(frozen=True, slots=True)
class Reloaded:
    """The graph was rebuilt from disk (a new `Session.loaded_graph` object). The foreign events that
    follow in the same batch replay the journal records the snapshot does not cover; the new graph
    already holds them when this batch is delivered. Derived state must be rebuilt from the graph."""


@dataclass(frozen=True, slots=True)
class Deleted:
    """This process deleted the session (`SessionStore.reset_session`); the object is closed. (A
    deletion by another process shows on disk only: `Session.on_disk()`.)"""


Event = Union[NodeAppended, NodeUpdated, HeadMoved, BranchNamed, MetaChanged, BranchSpawned,
              TurnCommitted, FilesRestored, Reloaded, Deleted]
Listener = Callable[[Any, list[Event]], None]


class Listeners:
    """The listeners of one session (`Session.listeners`): `fn(session, events)` after every change
    this process makes or reads from disk. Falsy when there is none (callers skip building events)."""

    __slots__ = ("_fns",)

    def __init__(self) -> None:
        self._fns: list[Listener] = []

    def __bool__(self) -> bool:
        return bool(self._fns)

    def add(self, fn: Listener) -> None:
        self._fns.append(fn)

    def remove(self, fn: Listener) -> bool:
        """Stop calling `fn`; False if it was not listening."""
        try:
            self._fns.remove(fn)
        except ValueError:
            return False
        return True

    def publish(self, session: object, events: list[Event]) -> None:  # the Session (a Listener's first argument)
        for fn in list(self._fns):
            fn(session, events)


def event_of(record: dict[str, Any], foreign: bool = False) -> Event:
    """The event of one applied journal record (the record format is journal.py's)."""
    if "a" in record:
        return NodeAppended(record["a"], foreign)
    if "u" in record:
        return NodeUpdated(record["u"], record["f"], foreign)
    if "c" in record:
        return HeadMoved(record["c"], foreign)
    if "n" in record:
        return BranchNamed(record["n"], record["v"], foreign)
    if "m" in record:
        return MetaChanged(record["m"], record["v"], foreign)
    raise ValueError(f"unknown journal record {sorted(record)}")


def events_of(record: dict[str, Any], foreign: bool = False) -> list[Event]:
    """The events of one applied journal record: its event, and for a spawn root journaled with its
    branch name (`{"a": node, "v": name}`, one record) the naming too."""
    ev = event_of(record, foreign)
    if "a" in record and record.get("v"):
        return [ev, BranchNamed(record["a"]["id"], record["v"], foreign)]
    return [ev]


__all__ = ["BranchNamed", "BranchSpawned", "Deleted", "Event", "Listeners", "FilesRestored", "HeadMoved", "Listener", "MetaChanged", "NodeAppended",
           "NodeUpdated", "Reloaded", "TurnCommitted", "event_of", "events_of"]
