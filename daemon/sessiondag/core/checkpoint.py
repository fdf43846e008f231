"""Workspace checkpoints, the pure part: what a snapshot of a working dir is (docs/checkpoints.md).

A snapshot (`WorkspaceState`) maps each path it tracks (bytes, relative, `/`-separated) to an `Entry`:
the git mode (regular 100644, executable 100755, symlink 120000), the git blob id of the content (a
symlink's content is its target) and the size. `stored` says whether the blob is in the session's
repository; a file over a size limit is recorded by id and size only (`over`: why). workspace/
produces snapshots, store/ writes them as git trees, rpc/ compares and restores them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Iterable, Mapping, Protocol

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODES = (MODE_FILE, MODE_EXEC, MODE_LINK)
BASELINE_KEY = "checkpoints.baseline"   # session meta: the snapshot taken before the first turn
UNDO_KEY = "checkpoints.undo"           # session meta: undo points of the restores, newest last
RESTORED_KEY = "checkpoints.restored"   # session meta: the files as the last restore left them
NODE_KEY = "checkpoint"                 # node metadata of a turn's user node: the end-of-turn snapshot
FILES_KEY = "workspace_files"           # node metadata of a file-writing tool: [{path, before_blob, after_blob}]
UNDO_KEEP = 20


class CheckpointOwner(Protocol):
    """What the checkpoint machinery reads of a session: store/'s SnapshotSource is called with one,
    workspace/'s Snapshots reads it (the two layers do not import each other; a store Session is one)."""

    @property
    def id(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def info(self) -> Mapping[str, object]: ...


@dataclass(frozen=True, slots=True)
class Entry:
    mode: int
    sha: str            # git blob id, hex
    size: int
    over: str | None = None   # None: the blob is stored; "file_limit" | "snapshot_limit": id and size only

    @property
    def stored(self) -> bool:
        return self.over is None


_SIZE, _OVER = attrgetter("size"), attrgetter("over")


@dataclass
class WorkspaceState:
    entries: dict[bytes, Entry] = field(default_factory=dict)
    partial: str | None = None      # None: every path examined; "budget": the time budget ran out
    examined: int = 0               # paths looked at (lstat)
    hashed: int = 0                 # files read and hashed (the stat cache missed)
    new_bytes: int = 0              # bytes of blobs not stored before
    seconds: float = 0.0
    mode: str = "walk"              # "walk" (the tree was walked) | "dirty" (only the paths marked dirty)
    changed: int | None = None      # stored paths that differ from the repository's previous snapshot (None: unknown)

    _tally: tuple[int, dict[bytes, Entry], dict[bytes, Entry], int] | None = field(default=None, repr=False,
                                                                                   compare=False)

    def _counted(self) -> tuple[dict[bytes, Entry], dict[bytes, Entry], int]:
        """(stored, over the limit, total bytes) in one pass, kept while `entries` is the same."""
        t = self._tally
        if t is None or t[0] != id(self.entries) or len(t[1]) + len(t[2]) != len(self.entries):
            entries = self.entries
            total = sum(map(_SIZE, entries.values()))       # C loops: they run once per snapshot of every file
            if any(map(_OVER, entries.values())):
                stored = {p: e for p, e in entries.items() if e.over is None}
                over = {p: e for p, e in entries.items() if e.over is not None}
            else:
                stored, over = entries, {}     # the same dict: nothing to leave out
            t = self._tally = (id(self.entries), stored, over, total)
        return t[1], t[2], t[3]

    def stored(self) -> dict[bytes, Entry]:
        return self._counted()[0]

    def over_limit(self) -> dict[bytes, Entry]:
        return self._counted()[1]

    def total_bytes(self) -> int:
        return self._counted()[2]


def blob_id(data: bytes) -> str:
    """The git blob id of `data`."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def summary(state: WorkspaceState, checkpoint_id: str) -> dict[str, object]:
    """What a node's metadata (NODE_KEY) or a session meta record says of a snapshot."""
    over = state.over_limit()
    return {"id": checkpoint_id, "files": len(state.entries), "bytes": state.total_bytes(),
            "over_limit": len(over), "partial": state.partial, "new_bytes": state.new_bytes, "mode": state.mode,
            "changed": state.changed}


def path_text(path: bytes) -> str:
    """A path for JSON and people (undecodable bytes as surrogate escapes, reversible by path_bytes)."""
    return path.decode("utf-8", "surrogateescape")


def path_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class Change:
    path: bytes
    kind: str                       # "added" | "modified" | "deleted" | "mode" (only the mode changed)
    old: Entry | None
    new: Entry | None


def changes(old: Mapping[bytes, Entry], new: Mapping[bytes, Entry],
            within: Iterable[bytes] | None = None) -> list[Change]:
    """What differs between two snapshots, by path (optionally only paths equal to or under `within`)."""
    prefixes = [p.rstrip(b"/") for p in within] if within is not None else None

    def wanted(p: bytes) -> bool:
        return prefixes is None or any(p == x or p.startswith(x + b"/") or not x for x in prefixes)

    out = []
    for p in sorted(set(old) | set(new)):
        if not wanted(p):
            continue
        a, b = old.get(p), new.get(p)
        if a is None:
            out.append(Change(p, "added", None, b))
        elif b is None:
            out.append(Change(p, "deleted", a, None))
        elif a.sha != b.sha or (a.mode == MODE_LINK) != (b.mode == MODE_LINK):
            out.append(Change(p, "modified", a, b))
        elif a.mode != b.mode:
            out.append(Change(p, "mode", a, b))
    return out
