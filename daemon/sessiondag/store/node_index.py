"""The node index of a snapshot chunk: each node's skeleton, so an open need not parse the bodies.

A commit that writes a chunk (`nodes/…/<t>.jsonl`, or a closed bucket `nodes/…/<b>.jsonl`) also
writes its index at the same path under `index/` with the suffix `.json`, as columns
(store/index_columns.py: one entry per line of the chunk in each, in line order). An index
written before the columns is read too, as rows:

    {"chunk": "<git blob id of the chunk>", "nodes": [[id, seq, created_at, role, name, status,
                                                        caller, predecessor, spawn], …],
     "spans": [span, …]}

one row per line of the chunk, in line order (`spawn` is 1 for a spawn-branch root, else 0). Both
record per line where its output's encoded JSON string lies (store/line_shape.py `packed_span`: start
<< 32 | end, 0 when the line has another shape), so a render slices it without searching. An
open reads a chunk's lines as they are (they stay each node's body and encoding until read) and
takes the skeleton from the index: one small parse instead of parsing every body. An index is used
only if it names the chunk blob found at its path and has one row per line; otherwise (a session
written before indexes existed, a chunk rewritten by such code, damage) the chunk is parsed whole,
as before. Readers that do not know `index/` ignore it: the chunks are unchanged; readers that know
only rows find no `nodes` in a column index and parse its chunk whole; readers that do
not know `spans` ignore that key, and an index without it (written before) or with a malformed one
gives rows without spans (the render searches the line instead).
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import orjson
from dulwich.objects import Blob, ObjectID
from dulwich.pack import Pack
from dulwich.repo import Repo

from ..core.errors import SessionDagError, SessionDeletedError
from ..core.model import Call
from . import index_columns
from .pack_blob import whole_blob


class CorruptSnapshotError(SessionDagError):  # (gitstore re-exports it)
    code = "corrupt"

SUFFIX = b".json"
_READING = object()  # DeferredChunk.ahead while the reader's thread reads it


def index_path(chunk_name: bytes) -> bytes:
    """`05.jsonl` -> `05.json` (the index entry beside a chunk entry, under index/)."""
    return chunk_name[: -len(b".jsonl")] + SUFFIX if chunk_name.endswith(b".jsonl") else chunk_name + SUFFIX


def build(chunk: bytes, chunk_id: bytes) -> bytes:
    """The index blob of `chunk` (JSONL of node records, as a commit writes it), as columns."""
    records = []
    loads = orjson.loads
    for line in chunk.split(b"\n"):
        if line:
            d = loads(line)
            d["input"], d["output"], d["reads"], d["metadata"]  # noqa: B018 - whole records only
            records.append((d, line))
    return orjson.dumps(index_columns.build(records, chunk_id))


class IndexRows(list):  # type: ignore[type-arg]
    """An index's rows, with its `spans` (one int per row) when it has well-formed ones, else None."""

    __slots__ = ("spans",)

    def __init__(self, rows: list[Any], spans: list[int] | None):
        super().__init__(rows)
        self.spans = spans


def rows_for(index: bytes | None, chunk_id: bytes) -> list[list[Any]] | None:
    """The rows of an index blob if it describes this chunk (names its blob id), else None: a
    column index as its Columns (index_columns.py), one written before as IndexRows; with the
    index's spans (`.spans`) when they are one int per row."""
    if index is None:
        return None
    try:
        d = orjson.loads(index)
        if d["chunk"] != chunk_id.decode():
            return None
        rows = d.get("nodes")
        cols = index_columns.columns(d, None) if rows is None else None
        if cols is not None:
            rows = cols
        elif not isinstance(rows, list):
            return None
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    spans = d.get("spans")
    if not (type(spans) is list and len(spans) == len(rows)
            and (not spans or (set(map(type, spans)) == {int} and min(spans) >= 0))):  # ints >= 0, no bools
        spans = None
    if cols is not None:
        cols.spans = spans
        return cols
    return IndexRows(rows, spans)


class ChunkReader:
    """Reads chunk blobs for deferred bodies, from any thread, outside the session lock: its own
    dulwich Repo (never the one the commit path uses), opened per read under its own mutex, so it
    holds no descriptor between reads and always sees packs merged since.

    Reads that go through a load's chunks in order (a whole branch read or rendered: this chunk is
    the load's first, or the chunk before it was the last read) read ahead: a thread of the
    reader's (one at a time, with a Repo of its own, gone when it has caught up) inflates the next
    AHEAD pending chunks while the reader's caller works on this one — zlib lets go of the
    interpreter while it inflates, so on a cold render of a long chat the reading is done beside
    the rendering instead of before it. A chunk read ahead waits as its bytes on its
    DeferredChunk (`ahead`) until one of its nodes is read; one the thread could not read (damage,
    a deleted session, no thread) is read again by the caller as before, who hears why. A read out
    of order (a node here and there, a tail page) reads its chunk alone and starts nothing."""

    AHEAD = 6        # chunks read ahead of the one read
    LINGER = 0.05    # seconds the thread waits for the next read in order before it ends

    def __init__(self, git_dir: str):
        self.git_dir = git_dir
        self._mutex = threading.Lock()
        self._chunks: list[weakref.ref[DeferredChunk]] = []  # the last load's deferred chunks, in load order
        self._load = (0, 0)                   # which load that is: (id, size) of its node table
        self._last: int | None = None         # position of the last chunk read from that load
        self._ahead = threading.Condition(threading.Lock())  # guards the fields below and `DeferredChunk.ahead`
        self._want = -1                       # read ahead up to this position
        self._next = 0                        # the next position the thread looks at
        self._reading = False                 # a read-ahead thread runs

    def register(self, chunk: "DeferredChunk", latest: dict[str, Call]) -> None:
        """`chunk` is the next deferred chunk of the load whose node table is `latest`
        (store/snapshot.py read_chunk: it only grows during a load, and a new load's starts empty)."""
        if id(latest) != self._load[0] or len(latest) < self._load[1]:
            with self._ahead:
                self._chunks, self._last, self._want, self._next = [], None, -1, 0
        self._load = (id(latest), len(latest))
        chunk.pos = len(self._chunks)
        self._chunks.append(weakref.ref(chunk))

    def taken(self, chunk: "DeferredChunk") -> bytes | None:
        """The chunk's bytes if they were read ahead (waiting for the thread if it is at it), else
        None. Then, if this read follows the one before it, the thread is set to read on. The
        caller holds the body lock (core/model.py), as every resolve does; the thread never takes it."""
        lst, p = self._chunks, chunk.pos
        ours = 0 <= p < len(lst) and lst[p]() is chunk
        with self._ahead:
            while chunk.ahead is _READING:
                self._ahead.wait()
            data, chunk.ahead = chunk.ahead, None
            if ours and (p == 0 or self._last == p - 1):
                self._want = p + self.AHEAD
                self._next = max(self._next, p + 1)
                if self._reading:
                    self._ahead.notify_all()  # the thread may be waiting for more
                elif self._next <= self._want:
                    self._reading = True
                    try:
                        threading.Thread(target=self._read_ahead, name="sessiondag-chunks", daemon=True).start()
                    except RuntimeError:  # no thread to be had: the caller reads each chunk itself
                        self._reading = False
            if ours:
                self._last = p
        return data if type(data) is bytes else None

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until no read-ahead thread runs (True), or `timeout` seconds (False)."""
        with self._ahead:
            return self._ahead.wait_for(lambda: not self._reading, timeout)

    def _pending(self) -> "DeferredChunk | None":
        """The next chunk to read ahead, if any up to `_want` (holding `_ahead`)."""
        lst = self._chunks
        while self._next <= self._want and self._next < len(lst):
            x = lst[self._next]()
            self._next += 1
            if x is not None and x.calls and x.ahead is None and x._view is None:  # not read yet
                return x
        return None

    def _read_ahead(self) -> None:
        """The thread: read the pending chunks up to `_want`, in order, then end."""
        repo: Repo | None = None
        maps: dict[str, mmap.mmap | None] = {}
        packs: list[Pack] = []
        chunk: DeferredChunk | None = None
        try:
            while True:
                with self._ahead:
                    chunk = self._pending()
                    if chunk is None:  # caught up: stay a moment for the next read in order
                        self._ahead.wait(self.LINGER)
                        chunk = self._pending()
                    if chunk is None:
                        self._reading = False
                        return
                    chunk.ahead = _READING
                data: bytes | None = None
                try:
                    if repo is None:
                        repo = Repo(self.git_dir)
                        packs = list(repo.object_store.packs)  # the property lists the pack directory each time
                    data = _blob(repo, packs, chunk.sha, maps)
                except Exception:  # noqa: BLE001 - damaged, unreadable, deleted: its own read says
                    data = None
                with self._ahead:
                    chunk.ahead = data
                    self._ahead.notify_all()
                chunk = None
        finally:
            with self._ahead:
                if chunk is not None and chunk.ahead is _READING:
                    chunk.ahead = None
                self._reading = False
                self._ahead.notify_all()
            for m in maps.values():
                if m is not None:
                    m.close()
            if repo is not None:
                repo.close()

    def read(self, sha: bytes) -> bytes:
        """The blob `sha`, read with a Repo opened for it (else `_unreadable`'s error)."""
        with self._mutex:
            try:
                repo = Repo(self.git_dir)
            except Exception as e:  # noqa: BLE001 - gone (deleted session), damaged, unreadable
                raise self._unreadable(sha, e) from None
            maps: dict[str, mmap.mmap | None] = {}
            failed: SessionDagError | None = None
            data = b""
            try:
                try:
                    data = _blob(repo, list(repo.object_store.packs), sha, maps)
                except Exception as e:  # noqa: BLE001 - damaged, unreadable
                    # raised once the Repo is closed: a live traceback of dulwich's read keeps
                    # views of its pack mapping, and closing it then fails (BufferError)
                    failed = self._unreadable(sha, e)
            finally:
                for m in maps.values():
                    if m is not None:
                        m.close()
                repo.close()
            if failed is not None:
                raise failed
            return data

    def _unreadable(self, sha: bytes, e: Exception) -> SessionDagError:
        """What a failed read of `sha` is: the session deleted under us (its directory is gone, as
        `sessiondag sessions reset` leaves it) — SessionDeletedError; else damage — corrupt."""
        if not os.path.isdir(self.git_dir):
            sid = os.path.basename(os.path.dirname(os.path.abspath(self.git_dir)))
            return SessionDeletedError(sid, "a node body was still in storage")
        if isinstance(e, CorruptSnapshotError):
            return e
        return CorruptSnapshotError(f"chunk {sha.decode()} unreadable: {type(e).__name__}: {e}")


def _blob(repo: Repo, packs: list[Pack], sha: bytes, maps: dict[str, mmap.mmap | None]) -> bytes:
    """The blob `sha`: straight from its pack when whole_blob takes it, else as dulwich reads it
    (and its error, if any)."""
    data = whole_blob(packs, sha, maps)
    if data is None:
        type_num, data = repo.object_store.get_raw(ObjectID(sha))  # dulwich's NewType of bytes
        if type_num != Blob.type_num:
            raise CorruptSnapshotError(f"object {sha.decode()} is not a Blob")
    return data


# a node's body as it is now, read at C level (context/stored.py compares it for a whole run): its
# stored line, the DeferredChunk it still lies in, a cached encoding, or None (core/model.py `_raw`)
body_of: Callable[[Call], object] = attrgetter("_raw")

# a chunk as `DeferredChunk.view` gives it: (its bytes, where each line starts — one entry more,
# one past the last line's end —, id(node) -> the node's line)
ChunkView = tuple[bytes, list[int], dict[int, int]]


class DeferredChunk:
    """The bodies of one indexed chunk, left in storage at open: every node of the chunk holds this
    object as its `_raw` until one of them is read; then the chunk is read once (or taken as the
    reader read it ahead: ChunkReader.taken) and each of its nodes that still points here gets
    its stored line (core/model.py calls `resolve` under the body lock).

    A reader that only slices the lines (a render: context/stored.py `scan_run`) takes `view`
    instead: the chunk read the same way, but kept whole with where its lines lie, so no node gets
    a copy of its line — splitting a long chat's chunks into 100k lines was a fifth of a cold
    render's time (the copies and the memory they take). A later `resolve` gives the lines out
    from the bytes kept, without reading again. The view needs no lock: the bytes never change,
    and two readers racing at worst read the chunk twice."""

    __slots__ = ("reader", "sha", "calls", "pos", "ahead", "_view", "__weakref__")

    def __init__(self, reader: ChunkReader, sha: bytes):
        self.reader = reader
        self.sha = sha
        self.calls: list[Call] = []
        self.pos = -1
        self.ahead: bytes | object | None = None  # read ahead: its bytes, or _READING
        self._view: ChunkView | None = None

    def _data(self) -> bytes:
        data = self.reader.taken(self)
        return data if data is not None else self.reader.read(self.sha)

    def view(self) -> ChunkView | None:
        """The chunk whole, where its lines start and which line is whose (`ChunkView`), read on
        first use; None once its nodes were given their lines (they hold them: read those). A
        chunk that does not match its index is corrupt, as for `resolve`."""
        v = self._view
        calls = self.calls
        if v is None and calls:
            data = self._data()
            v = self._view = (data, line_starts(data, len(calls), self.sha), {id(c): i for i, c in enumerate(calls)})
        return v

    def resolve(self, call: Call) -> bytes:
        v = self._view
        self._fill(v[0] if v is not None else self._data())
        raw = call._raw
        if type(raw) is not bytes:
            raise CorruptSnapshotError(f"node {call.id!r} is not in chunk {self.sha.decode()}")
        return raw

    def _fill(self, data: bytes) -> None:
        """Give each node of the chunk its line (a chunk that does not match its index is corrupt)."""
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        if len(lines) != len(self.calls):
            raise CorruptSnapshotError(f"chunk {self.sha.decode()} does not match its index")
        for c, line in zip(self.calls, lines):
            if c._raw is self:
                c._raw = line
        self.calls = []
        self._view = None


def line_starts(data: bytes, n: int, sha: bytes) -> list[int]:
    """Where each of the `n` lines of `data` starts, and one more entry one past the last line's
    end (a line i is data[starts[i]:starts[i + 1] - 1]); the lines as `DeferredChunk._fill`
    splits them (a last newline ends the last line). Not n lines: corrupt. One find per line
    (memchr) and no count of the newlines: bytes.count of one byte compares byte by byte, which
    for a 100k-node chat's 105 MB of chunks was ~50 ms of a cold render."""
    starts = [0]
    add, find, size = starts.append, data.find, len(data)
    p = 0
    for _ in range(n):
        q = find(b"\n", p)
        if q < 0:  # an unterminated last line: the last of the n, and not empty
            if p >= size or len(starts) != n:
                raise CorruptSnapshotError(f"chunk {sha.decode()} does not match its index")
            q = size
        p = q + 1
        add(p)
    if p < size:  # more lines than n
        raise CorruptSnapshotError(f"chunk {sha.decode()} does not match its index")
    return starts
