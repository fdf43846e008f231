"""Objects of a remote session, fetched into a quarantine before anything local sees them.

A quarantine is a bare repository under `<state>/sync/tmp/` whose `objects/info/alternates` names
the local session's objects (so the fetch sends our haves and a thin pack resolves against them;
the haves are our head and what we last exchanged with that remote, not their history).
Only once what it holds has been checked (pull.py) are its packs and loose objects moved into the
session's repository (rename on one filesystem, fsync'd, directory fsync'd); a failed pull deletes
it and leaves the session as it was. `read_snapshot` parses a fetched commit as hostile data.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import Callable, Mapping, Protocol, TypedDict, TypeVar, cast

import orjson
from dulwich.object_store import ObjectStoreGraphWalker
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.refs import Ref
from dulwich.repo import MemoryRepo, Repo

from ..core.errors import SessionDagError
from ..store.durable_files import fsync_dir
from ..store.gitstore import MODE_TREE
from . import transport
from .errors import RemoteDataError
from .history import MAIN

_S = TypeVar("_S")
RemoteNode = dict[str, object]   # a node record of a remote snapshot: its id a str, the rest unchecked


class RemoteMeta(TypedDict, total=False):
    """A remote snapshot's meta.json as read_objects checked it: the keys below of their type (the
    values inside unchecked), session_id absent or the session's."""
    session_id: str
    head_id: str
    branch_names: dict[str, object]
    spawn_heads: dict[str, object]
    extra: dict[str, object]
    turn: int
    usage_total: list[object]


class Objects(Protocol):
    """What a snapshot is read from: an object store, or received_pack.Objects."""
    def __getitem__(self, sha: ObjectID, /) -> ShaFile: ...


class Known(Protocol):
    """The objects a session holds already (an object store)."""
    def __contains__(self, sha: ObjectID, /) -> bool: ...
_BLOB_REF = re.compile(rb'"\$blob":"([0-9a-f]{40})"')


class _QuarantineRepo(Repo):
    """The quarantine's repository; its fetches send as haves only the commits named (`haves`), not
    their ancestors: dulwich's walker reads commit after commit of the session's history (each a
    lookup through every pack of the alternates) for haves a remote that holds one of these already
    knows. One the remote lacks is only a bigger pack: the remote sends what it finds missing."""

    haves: list[ObjectID] = []

    def get_graph_walker(self, heads: object = None) -> ObjectStoreGraphWalker:
        return ObjectStoreGraphWalker([h for h in self.haves if h in self.object_store], lambda sha: [])


class Quarantine:
    def __init__(self, state_dir: str, alternate_objects: str | None = None, base: bytes | None = None,
                 haves: list[bytes] | None = None):
        tmp = os.path.join(state_dir, "sync", "tmp")
        os.makedirs(tmp, mode=0o700, exist_ok=True)
        self.path = tempfile.mkdtemp(prefix="q-", dir=tmp)
        Repo.init_bare(self.path).close()
        if alternate_objects:
            with open(os.path.join(self.path, "objects", "info", "alternates"), "w") as f:
                f.write(os.path.abspath(alternate_objects) + "\n")
        self.haves = list(dict.fromkeys(ObjectID(h) for h in [base, *(haves or [])] if h is not None))
        self.repo = self._open()
        if base is not None:
            self.repo.refs[MAIN] = ObjectID(base)   # our have, resolved through the alternates

    def _open(self) -> Repo:
        repo = _QuarantineRepo(self.path)
        repo.haves = self.haves
        return repo

    def fetch(self, url: str, want: bytes, bounds: transport.Bounds | None = None) -> None:
        def wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
            return [] if ObjectID(want) in self.repo.object_store else [ObjectID(want)]
        transport.call(url, "pull", lambda client, path: client.fetch(path, self.repo, determine_wants=wants),
                       bounds)
        self.repo.close()
        self.repo = self._open()
        if ObjectID(want) not in self.repo.object_store:
            raise RemoteDataError(f"the remote did not send commit {want.decode()}")

    def own_files(self) -> list[tuple[str, str]]:
        """(path in the quarantine, path relative to objects/) of every object file it holds itself."""
        objects = os.path.join(self.path, "objects")
        out = []
        for dirpath, _dirs, files in os.walk(objects):
            rel_dir = os.path.relpath(dirpath, objects)
            if rel_dir == "info" or rel_dir.startswith("info" + os.sep):
                continue
            for name in files:
                out.append((os.path.join(dirpath, name), os.path.normpath(os.path.join(rel_dir, name))))
        # packs: the .pack before its .idx, so a reader never finds an index without its pack
        return sorted(out, key=lambda p: (p[1].endswith(".idx"), p[1]))

    def install_into(self, objects_dir: str) -> int:
        """Move what the quarantine fetched into `objects_dir`, durably. Returns the bytes of the
        objects moved: packs and loose objects, not the pack indexes (built here, not received)."""
        self.repo.close()
        moved, dirs = 0, set()
        for src, rel in self.own_files():
            dst = os.path.join(objects_dir, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            fd = os.open(src, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            if not rel.endswith(".idx"):
                moved += os.path.getsize(src)
            if not os.path.exists(dst):
                os.rename(src, dst)
            dirs.add(os.path.dirname(dst))
        for d in sorted(dirs):
            fsync_dir(d)
        fsync_dir(objects_dir)
        return moved

    def close(self) -> None:
        try:
            self.repo.close()
        except Exception:
            pass
        shutil.rmtree(self.path, ignore_errors=True)


def fetch_blobs(url: str, shas: list[bytes], bounds: transport.Bounds | None = None) -> MemoryRepo:
    """The blobs the remote's refs name (summaries), into memory: nothing else is fetched."""
    target = MemoryRepo()
    if shas:
        wanted = list(dict.fromkeys(ObjectID(s) for s in shas))

        def wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
            return wanted
        transport.call(url, "pull", lambda client, path: client.fetch(path, target, determine_wants=wants), bounds)
    return target


def fetch_named(url: str, pick: Callable[[dict[bytes, bytes]], list[bytes]],
                bounds: transport.Bounds | None = None) -> tuple[dict[bytes, bytes], MemoryRepo]:
    """(the remote's refs, the blobs `pick(refs)` names, in memory) in one connection: the refs
    are read once, from the same advertisement the fetch answers."""
    target = MemoryRepo()
    seen: dict[bytes, bytes] = {}

    def wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        seen.update({k: v for k, v in refs.items() if v is not None})
        return list(dict.fromkeys(ObjectID(s) for s in pick(seen)))
    transport.call(url, "pull", lambda client, path: client.fetch(path, target, determine_wants=wants), bounds)
    return seen, target


def _new_chunks(objects: Objects, tree_id: ObjectID, known: Known | None, depth: int = 0) -> list[ObjectID]:
    """The chunk blobs under nodes/ that `known` (the local session's objects) does not hold, in
    path order: a chunk we hold is one we wrote or merged before, its nodes ours already."""
    tree = objects[tree_id]
    if not isinstance(tree, Tree):
        raise RemoteDataError(f"nodes/ entry {tree_id.decode()} is not a tree")
    out = []
    for e in sorted(tree.items(), key=lambda e: e.path):
        if e.mode == MODE_TREE:
            if depth >= 2:
                raise RemoteDataError("the remote snapshot's nodes/ tree is too deep")
            out += _new_chunks(objects, e.sha, known, depth + 1)
        elif known is None or e.sha not in known:
            out.append(e.sha)
    return out


def _of(objects: Objects, sha: ObjectID, kind: type[_S]) -> _S:
    obj = objects[sha]
    if not isinstance(obj, kind):
        raise RemoteDataError(f"remote object {sha.decode()} is not a {kind.__name__}")
    return obj


def read_snapshot(git_dir: str, commit: bytes, session_id: str, known: Known | None = None
                  ) -> tuple[RemoteMeta, list[RemoteNode], list[ObjectID]]:
    """read_objects of the fetched objects in the repository at `git_dir`."""
    repo = Repo(git_dir)
    try:
        return read_objects(repo.object_store, commit, session_id, known)
    finally:
        repo.close()


def read_objects(objects: Objects, commit: bytes, session_id: str, known: Known | None = None
                 ) -> tuple[RemoteMeta, list[RemoteNode], list[ObjectID]]:
    """(meta, node dicts in seq order, blob ids the nodes reference) of a fetched commit in
    `objects` (an object store, or received_pack.Objects); anything that does not parse as a
    snapshot of `session_id` is RemoteDataError (nothing changed). With `known` (an object store),
    only the chunks it lacks are read: an incremental pull reads what is new, not the whole session."""
    try:
        root = _of(objects, _of(objects, ObjectID(commit), Commit).tree, Tree)
        meta = orjson.loads(_of(objects, root[b"meta.json"][1], Blob).data)
        if not isinstance(meta, dict):
            raise RemoteDataError("remote meta.json is not an object")
        latest: dict[str, RemoteNode] = {}
        chunks = _new_chunks(objects, root[b"nodes"][1], known) if b"nodes" in root else []
        for sha in chunks:
            data = _of(objects, sha, Blob).data
            for d in orjson.loads(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]"):
                if not isinstance(d, dict) or not isinstance(d.get("id"), str):
                    raise RemoteDataError("a chunk holds a record that is not a node")
                latest[d["id"]] = d
    except RemoteDataError:
        raise
    except (SessionDagError, KeyError, TypeError, ValueError, AttributeError, OSError, orjson.JSONDecodeError) as e:
        raise RemoteDataError(f"remote commit {commit.decode()} is not a readable session snapshot: {e}") from None
    for key, kind in (("head_id", str), ("branch_names", dict), ("spawn_heads", dict), ("extra", dict),
                      ("turn", int), ("usage_total", list)):
        if not isinstance(meta.get(key), kind):
            raise RemoteDataError(f"remote meta.json: {key} missing or not a {kind.__name__}")
    if meta.get("session_id") not in (None, session_id):
        raise RemoteDataError(f"remote commit is a snapshot of session {meta.get('session_id')!r}, not {session_id!r}")
    nodes = sorted(latest.values(), key=lambda d: s if isinstance(s := d.get("seq"), int) else -1)
    blobs: list[bytes] = sorted(set(_BLOB_REF.findall(orjson.dumps(nodes))))   # one encode: a ref never spans two nodes
    return cast(RemoteMeta, meta), nodes, cast(list[ObjectID], blobs)   # its keys' types checked above; blob ids
