"""Workspace checkpoints in the session's repository (docs/checkpoints.md).

A checkpoint is a git tree `{files/: the working dir's tracked files, info.json}`: `files/` holds each
stored file as a blob (symlinks as mode 120000, executables 100755), content-addressed, so a file
unchanged since the last snapshot costs nothing; `info.json` lists the files over a size limit (id
and size only) and how the snapshot went (partial, counts). The turn commit that records the turn's
nodes names the checkpoint at the root of its tree (`workspace`), and the turn's user node names it in
its metadata (`checkpoint`: {id, files, bytes, over_limit, partial}); the snapshot before the first
turn and the undo points of restores are session meta (`checkpoints.baseline`, `checkpoints.undo`)
written by a commit of their own that names their tree the same way. Every checkpoint is thus
reachable from the history: a clone carries it, a reopen or a rebuild finds it in the nodes.

The store knows no working dir: a `SnapshotSource` installed on the SessionStore (rpc/ and cli/ build
it from workspace/) gives the snapshot of a session's working dir; this module writes it.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from typing import Callable, ContextManager, Iterable, Iterator, Protocol

import orjson
from dulwich.objects import Blob, ObjectID, ShaFile, Tree

from ..core.checkpoint import BASELINE_KEY, MODE_LINK, MODES, NODE_KEY, CheckpointOwner, Entry, WorkspaceState, path_bytes, path_text, summary
from ..core.errors import NoCheckpointError
from ..core.graph import Graph
from ..core.model import ROOT, Call
from ..core.settings import Settings
from . import checkpoint_trees as trees
from .gitstore import MODE_TREE, GitSnapshots
from .node_index import CorruptSnapshotError
from .repo_size import repo_bytes_now
from .snapshot_sync import epoch

log = logging.getLogger(__name__)
FLUSH_BYTES = 64 << 20          # blobs buffered before they go to a pack of their own
INFO = b"info.json"
FILES = b"files"


class Taker(Protocol):
    def take(self, known: Callable[[str], bool], sink: Callable[[str, bytes], None],
             epoch: str = "") -> WorkspaceState:
        """The working dir's state; each blob `known` says is new goes to `sink`. `epoch` changes
        when a power loss may have taken blobs written unsynced (the boot id): a stat cache
        written in another epoch is checked against `known` first."""

    def stored(self, state: WorkspaceState) -> None:
        """`state`'s blobs and trees are in the repository now: its stat cache may name them."""


SnapshotSource = Callable[[CheckpointOwner], "Taker | None"]
"""session -> the snapshotter of its working dir (None: no checkpoints for it)."""


class Checkpointed(CheckpointOwner, Protocol):
    """What `take` uses of a session (store/session.py's Session, store/turn_commit.py's view of it;
    naming the class would be an import cycle)."""

    @property
    def git(self) -> GitSnapshots: ...

    @property
    def settings(self) -> Callable[[], Settings]: ...

    @property
    def snapshots(self) -> SnapshotSource | None: ...


class TurnHistory(Protocol):
    """What `resolve` and `previous_turn` read of a session: its graph and its open turn."""

    @property
    def graph(self) -> Graph: ...

    @property
    def turn_node_ids(self) -> tuple[str, ...]: ...


class Background(Protocol):
    """A session's first snapshot under way beside its first turn (runtime/baseline.py), which the
    Session owns: `close()` settles or stops it and returns once no thread of it is left."""

    def close(self) -> None: ...


class SnapshotStopped(Exception):
    """Raised by `write`'s `stopped` check: the snapshot was given up (its session closes)."""


class Writer:
    """Collects the new blobs of one snapshot (packs of FLUSH_BYTES as it goes), then writes its trees.
    Their packs are zlib-compressed (at least level 1, whatever store.pack_compression says: a
    workspace is read back only by a restore or a diff, and source text shrinks three- to fourfold)."""

    def __init__(self, git: GitSnapshots, level: int = 0, lock: Callable[[], ContextManager[object]] = nullcontext,
                 stopped: Callable[[], bool] | None = None):
        self.git, self.level = git, max(level, 1)
        self.lock = lock     # held while it writes (a snapshot taken outside the session lock passes it)
        self.stopped = stopped   # asked at every file read: True gives the snapshot up (SnapshotStopped)
        self.blobs: list[Blob] = []
        self.pending: set[bytes] = set()
        self.size = 0

    def known(self, sha: str) -> bool:
        if self.stopped is not None and self.stopped():
            raise SnapshotStopped()
        b = ObjectID(sha.encode())  # dulwich's NewType of bytes
        return b in self.pending or b in self.git.repo.object_store

    def sink(self, sha: str, data: bytes) -> None:
        blob = Blob.from_string(data)
        if blob.id.decode() != sha:
            raise ValueError("blob id mismatch")
        self.blobs.append(blob)
        self.pending.add(blob.id)
        self.size += len(data)
        if self.size >= FLUSH_BYTES:
            self._flush([])

    def _flush(self, extra: list[ShaFile]) -> None:
        # one record per object: two directories with the same content share one tree (a pack
        # with a duplicate is refused by its own index)
        objs = list({o.id: o for o in self.blobs + extra}.values())
        if objs:   # unsynced like a turn commit's pack (store/snapshot_sync.py; the stat cache knows)
            with self.lock():
                self.git.write_pack(objs, self.level, self.git.head())
        self.blobs, self.size = [], 0

    def finish(self, state: WorkspaceState) -> str:
        """Write the trees (and the blobs still buffered); returns the checkpoint's tree id."""
        with self.lock():
            return self._finish(state)

    def _finish(self, state: WorkspaceState) -> str:
        store = self.git.repo.object_store
        new: list[ShaFile] = []
        memo = trees.memos.get(self.git) or _memo_from_disk(self.git)
        stored = state.stored()
        fresh = trees.TreeMemo(stored, memo.ids if memo is not None else None)
        files = trees.build(stored, store, new, memo, fresh)
        info = Blob.from_string(orjson.dumps(info_of(state), option=orjson.OPT_SORT_KEYS))
        top = Tree()
        top[FILES] = (MODE_TREE, files)
        top[INFO] = (0o100644, info.id)
        for o in (info, top):
            if o.id not in fresh.ids and o.id not in store:
                new.append(o)
        self._flush(new)
        self.pending.clear()
        fresh.ids.update((info.id, top.id))
        fresh.ids.update(fresh.trees.values())   # its trees are stored now
        trees.memos[self.git] = fresh
        state.changed = fresh.changed
        return top.id.decode()


def _memo_from_disk(git: GitSnapshots) -> trees.TreeMemo | None:
    """The first snapshot of a process compares with the last one stored (its trees are rebuilt)."""
    try:
        head = git.head()
        ck = git.workspace(head) if head is not None else None
        return trees.TreeMemo({p: e for p, e in read(git, ck)[0].items() if e.stored}) if ck else None
    except CorruptSnapshotError:
        return None


def info_of(state: WorkspaceState) -> dict[str, object]:
    """What the tree cannot say (how the snapshot went lives in the records that name it: the same
    files give the same info, hence the same checkpoint id, and a turn that changed nothing stores
    nothing new)."""
    return {"version": 1, "partial": state.partial, "files": len(state.entries), "bytes": state.total_bytes(),
            "over_limit": [[path_text(p), e.mode, e.sha, e.size, e.over] for p, e in sorted(state.over_limit().items())]}


def write(git: GitSnapshots, taker: Taker, level: int = 0, lock: Callable[[], ContextManager[object]] = nullcontext,
          stopped: Callable[[], bool] | None = None) -> tuple[str, WorkspaceState]:
    """Take a snapshot and store it; (checkpoint id, the snapshot). `lock`: held only while writing
    (the walk and the hashing run without it). `stopped`: see Writer (nothing is recorded then)."""
    w = Writer(git, level, lock, stopped)
    state = taker.take(w.known, w.sink, epoch())
    ck = w.finish(state)
    taker.stored(state)
    return ck, state


def turn_opener(g: Graph, new_ids: Iterable[str]) -> str | None:
    """The ROOT-level user node (with a predecessor) that opened the turn being committed, if any."""
    opener = None
    for nid in new_ids:
        c = g.nodes.get(nid)
        if c is not None and c.role == "user" and c.caller == ROOT and c.predecessor:
            opener = nid
    return opener


def take(session: Checkpointed, level: int = 0, lock: Callable[[], ContextManager[object]] = nullcontext,
         stopped: Callable[[], bool] | None = None) -> tuple[str | None, dict[str, object]]:
    """Snapshot the session's working dir into its repository: (checkpoint id, summary for the
    records). A snapshot that fails never fails the commit: (None, {"error": why}). `lock`, `stopped`:
    see write (the caller holds the session lock when it passes no lock); SnapshotStopped goes up."""
    taker = session.snapshots(session) if session.snapshots is not None else None
    if taker is None:
        return None, {"error": "no working dir"}
    try:
        ck, state = write(session.git, taker, level, lock, stopped)
    except SnapshotStopped:
        raise
    except Exception as e:  # noqa: BLE001 - the working dir is the user's: anything may happen there
        log.warning("workspace snapshot of session %s failed: %s", session.id, e)
        return None, {"error": f"{type(e).__name__}: {e}"[:500]}
    out = summary(state, ck)
    budget = session.settings().session_budget_bytes
    used = repo_bytes_now(session.git.git_dir) if budget else 0
    if budget and used > budget:
        log.warning("session %s holds %d bytes of history, over its budget of %d (docs/checkpoints.md)",
                    session.id, used, budget)
        out["over_budget"] = used
    return ck, out


def turn_user(g: Graph, node_id: str) -> Call:
    """The ROOT-level user node whose turn holds `node_id` (sub-agent nodes climb to the node that
    spawned them), or the chain node where the walk back stopped (no turn: before the first one)."""
    c = g.get(node_id)
    seen = 0
    while c.caller not in (ROOT, None) and seen < 1_000_000:
        c = g.get(c.caller)
        seen += 1
    while not (c.role == "user" and c.caller == ROOT) and c.predecessor not in (None, ROOT):
        c = g.get(c.predecessor)
    return c


def resolve(session: TurnHistory, node_id: str) -> str:
    """The checkpoint of the files as they were at `node_id`: the end of its turn (the snapshot its
    turn's user node names), or the snapshot before the first turn for ROOT and the nodes before
    any turn. NoCheckpointError when there is none."""
    g = session.graph
    base = g.extra.get(BASELINE_KEY) or {}
    if node_id != ROOT:
        c = turn_user(g, node_id)
        if c.role == "user" and c.caller == ROOT:
            ck = c.metadata.get(NODE_KEY) or {}
            if ck.get("id"):
                node_ck: str = ck["id"]  # a checkpoint id (a tree id in hex)
                return node_ck
            why = ck.get("error") or ("its turn is still open" if c.id in session.turn_node_ids
                                      else "its turn was recorded without workspace checkpoints")
            raise NoCheckpointError(node_id, why)
    if base.get("id"):
        base_ck: str = base["id"]
        return base_ck
    raise NoCheckpointError(node_id, "no snapshot was taken before the first turn")


def previous_turn(session: TurnHistory, node_id: str) -> str:
    """The node whose files the turn of `node_id` started from: the chain node before its user
    node (ROOT for the first turn)."""
    g = session.graph
    c = turn_user(g, node_id)
    return c.predecessor if c.role == "user" and c.caller == ROOT and c.predecessor else ROOT


# --- reading ---------------------------------------------------------------------------------
_BAD_NAMES = (b"", b".", b"..", b".git")


def read(git: GitSnapshots, checkpoint_id: str) -> tuple[dict[bytes, Entry], dict[str, object]]:
    """(path -> entry, info) of a stored checkpoint; over-limit files come from info (not stored).
    Data from disk is checked: a name that could leave the working dir, an unknown mode, a
    malformed info.json raise CorruptSnapshotError."""
    top = git._obj(checkpoint_id.encode(), Tree)  # noqa: SLF001 - the store's own reader
    if FILES not in top or INFO not in top:
        raise CorruptSnapshotError(f"checkpoint {checkpoint_id} lacks files/ or info.json")
    try:
        info = orjson.loads(git._obj(top[INFO][1], Blob).data)  # noqa: SLF001
        over = {path_bytes(p): Entry(int(m), str(s), int(n), str(w)) for p, m, s, n, w in info["over_limit"]}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise CorruptSnapshotError(f"checkpoint {checkpoint_id}: info.json unreadable: {e}") from None
    entries: dict[bytes, Entry] = {}
    for path, mode, sha in _walk(git, top[FILES][1], b""):
        entries[path] = Entry(mode, sha, -1)
    for p, entry in over.items():
        if _valid_path(p):
            entries.setdefault(p, entry)
    return entries, info


def _valid_path(p: bytes) -> bool:
    return not any(part in _BAD_NAMES or b"\0" in part for part in p.split(b"/"))


def _walk(git: GitSnapshots, tree_id: bytes, prefix: bytes) -> Iterator[tuple[bytes, int, str]]:
    t = git._obj(tree_id, Tree)  # noqa: SLF001
    for e in t.items():
        if e.path in _BAD_NAMES or b"/" in e.path or b"\0" in e.path:
            raise CorruptSnapshotError(f"checkpoint tree names {e.path!r}")
        path = prefix + e.path
        if e.mode == MODE_TREE:
            yield from _walk(git, e.sha, path + b"/")
        elif e.mode in MODES:
            yield path, e.mode, e.sha.decode()
        else:
            raise CorruptSnapshotError(f"checkpoint entry {path!r} has mode {e.mode:o}")


def blob(git: GitSnapshots, sha: str) -> bytes:
    return git.get_blob(sha)


def is_link(e: Entry) -> bool:
    return e.mode == MODE_LINK
