"""Git snapshots of a session, written with dulwich objects directly (no index, no working tree).

Tree layout of every commit (one commit per turn; `t` is the commit's turn number):

    meta.json                         session meta: head, branch names, spawn heads, journal coverage …
    nodes/<t//4096>/<t//64%64>/<t%64>.jsonl
                                      the chunk of turn t: the nodes that turn created or changed
                                      (their latest state), one orjson line each, in seq order
    nodes/<t//4096>/<t//64%64>.jsonl  a closed bucket of 64 chunks compacted into one (latest wins)
    index/…/<…>.json                  each chunk's node index at the same path (node_index.py)
    blobs/<aa>/<sha>                  spilled fields and attachments, content-addressed (the entry
                                      name is the git blob id), so each body is stored once
    workspace/                        the latest workspace checkpoint (store/checkpoints.py)

Reading a snapshot applies the chunks in path order, a later record of a node replacing an earlier
one. A commit writes its chunk plus the three trees above it and the root: its cost follows the size
of the turn, not of the session (no tree has more than 64 node entries). Every 64th commit also
compacts the bucket it closes. Each commit's new objects go into one pack; small packs are
merged geometrically by size, big ones are left alone. A commit fsyncs nothing: the journal holds
its records durably, and store/snapshot_sync.py makes the snapshots durable in batches (before the
journal is rotated) and recovers them after a power loss.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Iterable, Iterator, Literal, TypeVar, overload

import orjson
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.pack import full_unpacked_object
from dulwich.refs import HEADREF, Ref
from dulwich.repo import Repo

from . import node_index, packs, raw_objects
from .node_index import CorruptSnapshotError  # noqa: F401 - raised here, imported from here
from . import git_ref
from .layout import restrict
from .loose_body import put_loose
from .pack_cache import PackCache
from .tree_edit import EditTree
from .snapshot_sync import SnapshotSync

log = logging.getLogger(__name__)

FANOUT = 64     # entries per nodes/ tree level
REF = Ref(b"refs/heads/main")
_S = TypeVar("_S", bound=ShaFile)
MODE_FILE = 0o100644
MODE_TREE = 0o040000
IDENTITY = b"sessiondag <sessiondag@localhost>"
_AS_RECORD = (EditTree, raw_objects.RawObject)  # objects packs.py takes as they are


def chunk_path(turn: int) -> tuple[bytes, bytes, bytes]:
    """(level-1 dir, level-2 dir, file name) of the chunk written by commit number `turn`."""
    return (b"%04d" % (turn // (FANOUT * FANOUT)), b"%02d" % (turn // FANOUT % FANOUT), b"%02d.jsonl" % (turn % FANOUT))


def merge_chunks(parts: Iterable[bytes]) -> bytes:
    """Chunks folded into one: each node once, its latest line, at its first position."""
    latest: dict[str, bytes] = {}
    for data in parts:
        for line in data.splitlines():
            if line:
                latest[orjson.loads(line)["id"]] = line
    return b"\n".join(latest.values()) + b"\n"


class GitSnapshots:
    def __init__(self, git_dir: str):
        self.git_dir = git_dir
        self._repo: Repo | None = None
        self._base: bytes | None = None        # commit the tree cache below describes
        self._trees: dict[bytes, EditTree] = {}  # path -> tree, for the trees a commit may rewrite
        self.pack_compression = 0              # zlib level of the packs written (setting store.pack_compression)
        self.bodies = node_index.ChunkReader(git_dir)  # reads deferred bodies (node_index.py)
        self.ref_path = os.path.join(git_dir, *REF.decode().split("/"))
        self.durability = SnapshotSync(git_dir, self.ref_path)
        self.cache = PackCache()               # unsynced packs, the open bucket's chunks (pack_cache.py)

    @staticmethod
    def init(git_dir: str) -> None:
        repo = Repo.init_bare(git_dir, mkdir=True)
        try:
            repo.refs.set_symbolic_ref(HEADREF, REF)  # so HEAD never names a branch that never exists
        finally:
            repo.close()
        with open(os.path.join(git_dir, "description"), "w") as f:
            f.write("sessiondag session\n")
        restrict(git_dir)  # dulwich made its directories with the umask's mode (layout.py)

    @property
    def repo(self) -> Repo:
        if self._repo is None:
            self._repo = Repo(self.git_dir)
            self._repo.object_store.fsync_object_files = True
        return self._repo

    def _close_repo(self) -> None:
        if self._repo is not None:
            try:
                self._repo.close()
            except BufferError:  # a view into a damaged pack's mmap is still alive; the GC frees it
                pass
        self._repo = None

    def refresh(self) -> None:
        """Forget open packs and cached trees (another process committed or repacked)."""
        self._close_repo()
        self._base = None
        self._trees.clear()

    def close(self) -> None:
        self.refresh()

    def head(self) -> bytes | None:
        sha = git_ref.read_loose(self.ref_path)  # the common case, without dulwich's ref machinery
        if sha is not None:
            return sha
        try:
            return self.repo.refs[REF]
        except KeyError:
            return None
        except Exception as e:  # unreadable ref file
            raise CorruptSnapshotError(f"cannot read {REF.decode()}: {e}") from None

    def head_text(self) -> str:
        return git_ref.text(self.ref_path)

    def reset_ref(self, sha: bytes | None) -> None:
        """Point the ref at `sha` (None: remove it) durably, whatever it holds (power-loss recovery)."""
        git_ref.reset(self.ref_path, sha)
        self.refresh()

    # --- reading -----------------------------------------------------------------------------
    def _obj(self, sha: bytes, kind: type[_S]) -> _S:
        obj = self._fetch(sha)
        if not isinstance(obj, kind):
            raise CorruptSnapshotError(f"object {sha.decode()} is not a {kind.__name__}")
        return obj

    def _blob_bytes(self, sha: bytes) -> bytes:
        """A blob's content without rehashing it (the bulk chunk reads of an open: a pack's
        zlib checksum still guards the bytes, and a damaged record fails to parse)."""
        type_num, data = self._fetch(sha, raw=True)
        if type_num != Blob.type_num:
            raise CorruptSnapshotError(f"object {sha.decode()} is not a Blob")
        return data

    @overload
    def _fetch(self, sha: bytes, raw: Literal[False] = False) -> ShaFile: ...
    @overload
    def _fetch(self, sha: bytes, raw: Literal[True]) -> tuple[int, bytes]: ...

    def _fetch(self, sha: bytes, raw: bool = False) -> ShaFile | tuple[int, bytes]:
        for attempt in (0, 1):
            err = None
            try:
                store = self.repo.object_store
                oid = ObjectID(sha)  # dulwich's NewType of bytes (the same object at run time)
                obj = store.get_raw(oid) if raw else store[oid]
            except Exception as e:
                err = f"object {sha.decode()} unreadable: {type(e).__name__}: {e}"
            if err is None:
                break
            if attempt == 0:
                # another process may have merged packs away under our open handles: reopen the
                # repository (objects are immutable, so the tree cache stays valid) and retry once
                self._close_repo()
                continue
            # raised outside the handler: the failed read's frames (and their views into a pack's
            # mmap) must not stay alive in __context__
            raise CorruptSnapshotError(err)
        return obj

    def load_meta(self, commit_sha: bytes) -> tuple[dict[str, Any], Tree]:
        commit = self._obj(commit_sha, Commit)
        root = self._obj(commit.tree, Tree)
        try:
            meta = orjson.loads(self._obj(root[b"meta.json"][1], Blob).data)
        except (KeyError, orjson.JSONDecodeError) as e:
            raise CorruptSnapshotError(f"meta.json missing or unreadable: {e}") from None
        if not isinstance(meta, dict):
            raise CorruptSnapshotError("meta.json is not an object")
        return meta, root

    def load(self, commit_sha: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(meta, node dicts in seq order, each node once in its latest state) of a snapshot."""
        meta, chunks = self.load_chunks(commit_sha)
        latest: dict[str, dict[str, Any]] = {}
        for recs in chunks:
            for d in recs:
                latest[d["id"]] = d
        return meta, list(latest.values())

    def load_chunks(self, commit_sha: bytes) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
        """(meta, the node records of every chunk in path order) of a snapshot commit."""
        meta, root = self.load_meta(commit_sha)
        chunks: list[list[dict[str, Any]]] = []
        for where, data, sha, _, _ in self.iter_chunks(root, defer=False):
            if data is None:  # defer=False: every chunk comes as its bytes
                raise CorruptSnapshotError(f"chunk {where} came without its bytes")
            # one parse per chunk: its lines are orjson output (no raw newline inside a record),
            # so joining them with commas makes one JSON array
            try:
                recs = orjson.loads(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]")
            except orjson.JSONDecodeError as exc:
                raise CorruptSnapshotError(f"chunk {where} unreadable: {exc}") from None
            # (a record that is not a node object fails on its "id" when the chunks are folded)
            chunks.append(recs)
        return meta, chunks

    def iter_chunks(self, root: Tree, defer: bool = True) -> Iterator[
            tuple[str, bytes | None, bytes, list[Any] | None, node_index.ChunkReader | None]]:
        """(path, JSONL bytes, blob id, index rows, reader) of every chunk of a snapshot's root
        tree, in path order. A chunk with a valid index (node_index.py) comes as its rows and the
        reader of its deferred bodies, its bytes left in storage (None); otherwise (or with
        `defer=False`) as its bytes, read one blob at a time, rows and reader None."""
        if b"nodes" in root:
            index = self._obj(root[b"index"][1], Tree) if b"index" in root and defer else None
            yield from self._collect(self._obj(root[b"nodes"][1], Tree), index, b"nodes", 0)

    def _collect(self, tree: Tree, index: Tree | None, path: bytes, depth: int) -> Iterator[
            tuple[str, bytes | None, bytes, list[Any] | None, node_index.ChunkReader | None]]:
        for e in sorted(tree.items(), key=lambda e: e.path):
            where = path + b"/" + e.path
            if e.mode == MODE_TREE:
                if depth >= 2:
                    raise CorruptSnapshotError(f"unexpected tree {where.decode()}")
                sub = index[e.path] if index is not None and e.path in index else None
                sub_tree = self._obj(sub[1], Tree) if sub is not None and sub[0] == MODE_TREE else None
                yield from self._collect(self._obj(e.sha, Tree), sub_tree, where, depth + 1)
                continue
            name = node_index.index_path(e.path)
            ix = index[name] if index is not None and name in index else None
            rows = node_index.rows_for(self._blob_bytes(ix[1]), e.sha) if ix is not None and ix[0] == MODE_FILE else None
            if rows is not None:
                yield where.decode(), None, e.sha, rows, self.bodies
            else:
                yield where.decode(), self._blob_bytes(e.sha), e.sha, None, None

    def workspace(self, commit_sha: bytes) -> str | None:
        """The checkpoint a commit names (`workspace` at its root), if any."""
        root = self._obj(self._obj(commit_sha, Commit).tree, Tree)
        return root[b"workspace"][1].decode() if b"workspace" in root else None

    def get_blob(self, sha: str) -> bytes:
        return self._obj(sha.encode(), Blob).data

    # --- writing -----------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        """Store a body durably, loose (store/loose_body.py), and return its git blob id.
        Idempotent: a body already stored is not written again."""
        sha, written = put_loose(self.repo.object_store, data)
        if written:
            self.cache.loose_added = True
        return sha

    def _tree(self, path: bytes) -> EditTree:
        """The tree at `path` in the base commit (a fresh empty tree if absent), to edit."""
        t = self._trees.get(path)
        if t is not None:
            return t
        t = EditTree()
        parent, _, name = path.rpartition(b"/")
        up = self._trees.get(parent) if path else None
        if up is not None:  # its parent as the commits edit it (a new bucket's tree): no walk from the root
            entry = up.entries.get(name)
            if entry is not None:
                t = EditTree.of(self._obj(entry[1], Tree))
        elif self._base is not None:
            root = self._obj(self._obj(self._base, Commit).tree, Tree)
            node = root
            ok = True
            for part in [p for p in path.split(b"/") if p]:
                if part not in node:
                    ok = False
                    break
                node = self._obj(node[part][1], Tree)
            if ok:
                t = EditTree.of(node if path else root)  # a private, mutable copy
        self._trees[path] = t
        return t

    def commit(self, meta: dict[str, Any], chunk: bytes | None, turn: int, blob_ids: Iterable[str],
               message: str, parent: bytes | None, merge_parent: bytes | None = None,
               workspace: str | None = None) -> bytes:
        """Write one turn: its chunk (None: meta only), spilled-blob entries, meta, the commit; move
        the ref from `parent`. `merge_parent`: a second parent (a merge). `workspace`: a checkpoint
        tree already stored (store/checkpoints.py), named `workspace` at the root from this commit
        on. Returns the commit id."""
        try:
            c = self._write_commit(meta, chunk, turn, blob_ids, message, parent, merge_parent, workspace)
        except BaseException:
            # the tree cache was edited in place for a commit that does not exist: forget it (and
            # the open packs), so the next commit rebuilds from what the ref names on disk
            self.refresh()
            raise
        self._base = c
        try:
            if not self.cache.maintain(self.repo.object_store, self.git_dir, self.pack_compression,
                                       self.durability.deferred()):
                self._close_repo()
        except Exception as e:  # housekeeping only: the commit is durable and the ref names it
            log.warning("pack maintenance after commit failed (retried on the next commit): %s", e)
            self._close_repo()
        return c

    def _write_commit(self, meta: dict[str, Any], chunk: bytes | None, turn: int, blob_ids: Iterable[str],
                      message: str, parent: bytes | None, merge_parent: bytes | None = None,
                      workspace: str | None = None) -> bytes:
        if parent != self._base:  # another process committed (or a first commit here)
            self._trees.clear()
            self.cache.forget()
            self._base = parent
        new: list[raw_objects.RawObject | EditTree] = []
        root = self._tree(b"")
        if chunk is not None:
            l1, l2, name = chunk_path(turn)
            closing = turn % FANOUT == FANOUT - 1  # this turn closes its bucket: compact it into one chunk
            if closing:  # the bucket's chunks: as this process wrote them, else read back
                t2 = self._tree(b"nodes/" + l1 + b"/" + l2)
                parts = [self.cache.chunk(sha) or self._obj(sha, Blob).data for _, sha in t2.names()]
                chunk = merge_chunks(parts + [chunk])
                self.cache.drop_chunks()
            blob = raw_objects.blob(chunk)
            if not closing:
                self.cache.keep_chunk(blob.id, chunk)
            ix = raw_objects.blob(node_index.build(chunk, blob.id))
            # the chunk under nodes/, its index at the same place under index/ (node_index.py)
            for top, b, leaf in ((b"nodes", blob, name), (b"index", ix, node_index.index_path(name))):
                p1, p2 = top + b"/" + l1, top + b"/" + l1 + b"/" + l2
                t1 = self._tree(p1)
                if closing:
                    if l2 in t1:
                        del t1[l2]
                    self._trees.pop(p2, None)
                    t1[l2 + (b".jsonl" if top == b"nodes" else node_index.SUFFIX)] = (MODE_FILE, b.id)
                    new.append(b)
                else:
                    t2 = self._tree(p2)
                    t2[leaf] = (MODE_FILE, b.id)
                    new.extend((b, t2))
                    t1[l2] = (MODE_TREE, t2.id)
                top_tree = self._tree(top)
                top_tree[l1] = (MODE_TREE, t1.id)
                new.extend((t1, top_tree))
                root[top] = (MODE_TREE, top_tree.id)
        blob_ids = sorted(set(blob_ids))
        if blob_ids:
            blobs = self._tree(b"blobs")
            fans = set()
            for bid in blob_ids:
                self._tree(b"blobs/" + bid[:2].encode())[bid.encode()] = (MODE_FILE, bid.encode())
                fans.add(bid[:2].encode())
            for fan in sorted(fans):
                ft = self._tree(b"blobs/" + fan)
                new.append(ft)
                blobs[fan] = (MODE_TREE, ft.id)
            new.append(blobs)
            root[b"blobs"] = (MODE_TREE, blobs.id)
        if workspace is not None:
            root[b"workspace"] = (MODE_TREE, workspace.encode())
        mblob = raw_objects.blob(orjson.dumps(meta, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")
        new.append(mblob)
        root[b"meta.json"] = (MODE_FILE, mblob.id)
        new.append(root)
        c = raw_objects.commit(root.id, [p for p in (parent, merge_parent) if p], IDENTITY, int(time.time()),
                               message.encode() + (b"" if message.endswith("\n") else b"\n"))
        new.append(c)
        deferred = self.write_pack(new, self.pack_compression, parent)
        self._set_ref(parent, c.id, in_place=deferred)
        return c.id

    def write_pack(self, objects: list[Any], level: int, head: bytes | None) -> bool:
        """Write `objects` as one pack (a commit's, or a workspace checkpoint's before the commit
        that names it): where commits defer their fsyncs, after the unsynced marker (`head`: the ref
        now) and without fsync, merged with the other unsynced packs; else durably. Under the
        session lock. True if it was left unsynced (store/snapshot_sync.py)."""
        deferred = self.durability.deferred()
        if deferred:  # the marker first: a power loss from here on is recovered at open
            self.durability.before_unsynced_write(head)
        recs = [o if type(o) in _AS_RECORD else full_unpacked_object(o) for o in objects]  # (packs.py takes both)
        self.cache.add_pack(self.repo.object_store, recs, level, deferred)
        return deferred

    def _set_ref(self, old: bytes | None, new: bytes, in_place: bool = False) -> None:
        git_ref.move(self.repo, self.ref_path, REF, old, new, in_place)

    def sync(self, merge: bool = True) -> None:
        """The sync point (before the journal may rotate): every snapshot written so far durable,
        then merge what may merge, durably (store/snapshot_sync.py). `merge=False` (a push, which
        needs only the durability): the merge waits for the next sync point; until then the packs
        made durable here are no commit's to merge, so the caller bounds how many may wait."""
        self.durability.sync()
        self.cache.synced()
        if merge and self.durability.deferred():
            if not packs.maintain(self.repo.object_store, self.git_dir, self.pack_compression):
                self._close_repo()
