"""Git snapshots of a session, written with dulwich objects directly (no index, no working tree).

Tree layout of every commit (one commit per turn):

    meta.json                    session meta: head, branch names, spawn heads, journal coverage …
    nodes/<bucket>/<seg>.jsonl   nodes by seq: SEG nodes per segment, BUCKET segments per bucket
    blobs/<aa>/<sha>             spilled fields and attachments, content-addressed (the entry name
                                 is the git blob id), so each body is stored once

A commit rewrites only the segments its turn touched plus their parent trees, so its cost does not
grow with the session. Each commit's new objects go into one pack (fsync'd); packs are merged
geometrically so there are only O(log n) of them and no object is rewritten more than O(log n) times.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Iterable

import orjson
from dulwich.objects import Blob, Commit, Tree
from dulwich.file import FileLocked
from dulwich.pack import full_unpacked_object, write_pack_data, write_pack_index
from dulwich.repo import Repo

from ..core.errors import SessionDagError
from .journal import fsync_dir

SEG = 64        # nodes per segment blob
BUCKET = 64     # segments per bucket tree
REF = b"refs/heads/main"
MODE_FILE = 0o100644
MODE_TREE = 0o040000
IDENTITY = b"sessiondag <sessiondag@localhost>"
MAX_PACKS = 8                    # small packs allowed before a merge
MAX_LOOSE = 64                   # loose objects (spilled bodies) allowed before they are packed
SEALED_PACK_BYTES = 16 << 20     # packs this big are never rewritten on the commit path
PACK_COMPRESSION = int(os.environ.get("SESSIONDAG_PACK_COMPRESSION", "1"))  # zlib level of our packs


class CorruptSnapshotError(SessionDagError):
    code = "corrupt"


def seg_path(seg: int) -> tuple[bytes, bytes]:
    return (b"%04d" % (seg // BUCKET), b"%06d.jsonl" % seg)


class GitSnapshots:
    def __init__(self, git_dir: str):
        self.git_dir = git_dir
        self._repo: Repo | None = None
        self._base: bytes | None = None        # commit the tree cache below describes
        self._trees: dict[bytes, Tree] = {}    # path -> tree, for the trees a commit may rewrite

    @staticmethod
    def init(git_dir: str) -> None:
        Repo.init_bare(git_dir, mkdir=True)
        with open(os.path.join(git_dir, "description"), "w") as f:
            f.write("sessiondag session\n")

    @property
    def repo(self) -> Repo:
        if self._repo is None:
            self._repo = Repo(self.git_dir)
            self._repo.object_store.fsync_object_files = True
        return self._repo

    def refresh(self) -> None:
        """Forget open packs and cached trees (another process committed or repacked)."""
        if self._repo is not None:
            try:
                self._repo.close()
            except BufferError:  # a view into a damaged pack's mmap is still alive; the GC frees it
                pass
        self._repo = None
        self._base = None
        self._trees.clear()

    def close(self) -> None:
        self.refresh()

    def head(self) -> bytes | None:
        try:
            return self.repo.refs[REF]
        except KeyError:
            return None
        except Exception as e:  # unreadable ref file
            raise CorruptSnapshotError(f"cannot read {REF.decode()}: {e}") from None

    # --- reading -----------------------------------------------------------------------------
    def _obj(self, sha: bytes, kind: type):
        err = None
        try:
            obj = self.repo.object_store[sha]
        except Exception as e:
            err = f"object {sha.decode()} unreadable: {type(e).__name__}: {e}"
        if err is not None:  # raised outside the handler: the failed read's frames (and their views
            raise CorruptSnapshotError(err)  # into a pack's mmap) must not stay alive in __context__
        if not isinstance(obj, kind):
            raise CorruptSnapshotError(f"object {sha.decode()} is not a {kind.__name__}")
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
        meta, segments = self.load_segments(commit_sha)
        return meta, [d for seg in segments for d in seg[1]]

    def load_segments(self, commit_sha: bytes) -> tuple[dict[str, Any], list[tuple[int, list[dict[str, Any]]]]]:
        """(meta, [(segment number, node dicts)] in seq order) of a snapshot commit."""
        meta, root = self.load_meta(commit_sha)
        nodes: list[tuple[int, list[dict[str, Any]]]] = []
        if b"nodes" in root:
            nodes_tree = self._obj(root[b"nodes"][1], Tree)
            for b_entry in sorted(nodes_tree.items(), key=lambda e: e.path):
                bucket = self._obj(b_entry.sha, Tree)
                for s_entry in sorted(bucket.items(), key=lambda e: e.path):
                    data = self._obj(s_entry.sha, Blob).data
                    # one parse per segment: its lines are orjson output (no raw newlines inside a
                    # record), so joining them with commas makes one JSON array
                    try:
                        recs = orjson.loads(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]")
                    except orjson.JSONDecodeError as e:
                        raise CorruptSnapshotError(f"segment {s_entry.path.decode()} unreadable: {e}") from None
                    if not all(type(r) is dict for r in recs):
                        raise CorruptSnapshotError(f"segment {s_entry.path.decode()} holds a non-object")
                    try:
                        seg_no = int(s_entry.path.split(b".", 1)[0])
                    except ValueError:
                        raise CorruptSnapshotError(f"unexpected segment name {s_entry.path!r}") from None
                    nodes.append((seg_no, recs))
        return meta, nodes

    def get_blob(self, sha: str) -> bytes:
        return self._obj(sha.encode(), Blob).data

    # --- writing -----------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        """Store a body durably (loose, fsync'd, its directory entry too) and return its git blob
        id. Idempotent: a body already stored is not written again."""
        blob = Blob.from_string(data)
        store = self.repo.object_store
        if blob.id in store:
            return blob.id.decode()
        fan = os.path.join(store.path, blob.id[:2].decode())
        new_fan = not os.path.isdir(fan)
        try:
            store.add_object(blob)
        except FileLocked:  # a writer killed while writing this very body left its lock file
            os.unlink(os.path.join(fan, blob.id[2:].decode() + ".lock"))
            store.add_object(blob)
        fsync_dir(fan)
        if new_fan:
            fsync_dir(store.path)
        return blob.id.decode()

    def _tree(self, path: bytes) -> Tree:
        """The tree at `path` in the base commit (a fresh empty tree if absent)."""
        t = self._trees.get(path)
        if t is not None:
            return t
        t = Tree()
        if self._base is not None:
            root = self._obj(self._obj(self._base, Commit).tree, Tree)
            node = root
            ok = True
            for part in [p for p in path.split(b"/") if p]:
                if part not in node:
                    ok = False
                    break
                node = self._obj(node[part][1], Tree)
            if ok:
                t = node if path else root
                t = Tree.from_raw_string(Tree.type_num, t.as_raw_string())  # private, mutable copy
        self._trees[path] = t
        return t

    def commit(self, meta: dict[str, Any], segments: dict[int, bytes], blob_ids: Iterable[str],
               message: str, parent: bytes | None) -> bytes:
        if parent != self._base:
            self._trees.clear()
            self._base = parent
        new: list[Blob | Tree | Commit] = []
        touched_buckets: set[bytes] = set()
        for seg, data in segments.items():
            bname, sname = seg_path(seg)
            blob = Blob.from_string(data)
            new.append(blob)
            self._tree(b"nodes/" + bname)[sname] = (MODE_FILE, blob.id)
            touched_buckets.add(bname)
        nodes = self._tree(b"nodes")
        for bname in sorted(touched_buckets):
            bt = self._tree(b"nodes/" + bname)
            new.append(bt)
            nodes[bname] = (MODE_TREE, bt.id)
        root = self._tree(b"")
        if touched_buckets:
            new.append(nodes)
            root[b"nodes"] = (MODE_TREE, nodes.id)
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
        mblob = Blob.from_string(orjson.dumps(meta, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")
        new.append(mblob)
        root[b"meta.json"] = (MODE_FILE, mblob.id)
        new.append(root)
        c = Commit()
        c.tree = root.id
        c.parents = [parent] if parent else []
        c.author = c.committer = IDENTITY
        c.author_time = c.commit_time = int(time.time())
        c.author_timezone = c.commit_timezone = 0
        c.message = message.encode() + (b"" if message.endswith("\n") else b"\n")
        new.append(c)
        self._add_pack(new)
        self._set_ref(parent, c.id)
        self._base = c.id
        self._maybe_merge_packs()
        return c.id

    def _set_ref(self, old: bytes | None, new: bytes) -> None:
        lock = os.path.join(self.git_dir, *REF.decode().split("/")) + ".lock"
        if os.path.exists(lock):  # the caller holds the session lock: this one is stale (killed writer)
            os.unlink(lock)
        if not self.repo.refs.set_if_equals(REF, old, new):
            raise CorruptSnapshotError(f"{REF.decode()} moved under the session lock")
        if old is None:
            self.repo.refs.set_symbolic_ref(b"HEAD", REF)

    def _maybe_merge_packs(self) -> None:
        """Keep the object store small in files: pack loose bodies, merge small packs by size tier.

        Called under the session lock after each commit. Packs of at least SEALED_PACK_BYTES are
        never rewritten here, so no commit pays for rereading the whole history; below that,
        packs merge geometrically by bytes (each merge at least doubles what it rewrites), so an
        object is rewritten O(log) times and at most MAX_PACKS small packs exist at once."""
        store = self.repo.object_store
        self._remove_garbage()
        loose = list(store._iter_loose_objects())
        if len(loose) >= MAX_LOOSE:
            objs = [store._get_loose_object(sha) for sha in loose]
            self._write_pack([o for o in objs if o is not None], [])
            for o in objs:
                if o is not None:
                    store.delete_loose_object(o.id)
        small = []
        for p in store.packs:
            try:
                size = os.path.getsize(p._data_path)
            except FileNotFoundError:  # removed by another process: forget our open handles
                self.refresh()
                return
            if size < SEALED_PACK_BYTES:
                small.append((size, p))
        if len(small) <= MAX_PACKS:
            return
        small.sort(key=lambda e: e[0])
        chosen, total = [], 0
        for size, p in small:  # the smallest packs, while the next is not much bigger than all so far
            if len(chosen) >= 2 and size > 2 * total and len(small) - len(chosen) <= MAX_PACKS:
                break
            chosen.append(p)
            total += size
        objs = {}
        for p in chosen:
            for o in p.iterobjects():
                objs[o.id] = o
        self._write_pack(list(objs.values()), chosen)

    def _add_pack(self, objs: list) -> bytes:
        """Write `objs` as one durable pack + index; returns the pack's checksum.

        Our own writer rather than dulwich's add_objects, which derives the name of every
        existing pack (hashing all their object ids) on each call: O(history) per commit.
        Order: pack and index fsync'd under temp names, the pack renamed in, then the index
        (dulwich and git only use a pack whose .idx exists), then the directory fsync'd — all
        before the caller moves the ref, so a ref never names an object that is not durable."""
        store = self.repo.object_store
        pack_dir = store.pack_dir
        # temp names must not end in .pack/.idx: a matching pair would look like a real pack
        fd, tmp = tempfile.mkstemp(dir=pack_dir, prefix="tmp_", suffix=".pack-tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                entries, checksum = write_pack_data(
                    f.write, (full_unpacked_object(o) for o in objs), store.object_format,
                    num_records=len(objs), compression_level=PACK_COMPRESSION)
                f.flush()
                os.fsync(f.fileno())
            idx_tmp = tmp[:-9] + ".idx-tmp"
            with open(idx_tmp, "wb") as f:
                write_pack_index(f, sorted((k, off, crc) for k, (off, crc) in entries.items()), checksum)
                f.flush()
                os.fsync(f.fileno())
            base = os.path.join(pack_dir, "pack-" + checksum.hex())
            os.rename(tmp, base + ".pack")
            os.rename(idx_tmp, base + ".idx")
        except BaseException:
            for path in (tmp, tmp[:-9] + ".idx-tmp"):
                if os.path.exists(path):
                    os.unlink(path)
            raise
        fsync_dir(pack_dir)
        return checksum

    def _write_pack(self, objs: list, replaces: list) -> None:
        """Write `objs` as one pack, make it durable, then drop the packs it replaces."""
        store = self.repo.object_store
        name = self._add_pack(objs).hex().encode() if objs else None
        for p in replaces:
            if p._basename.endswith(name.decode() if name else "\0"):
                continue
            idx, data = p._idx_path, p._data_path
            store._remove_pack(p)
            for path in (idx, data):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass

    def _remove_garbage(self) -> None:
        """Temp files a killed writer left (we hold the session lock: nobody is writing them)."""
        pack_dir = os.path.join(self.git_dir, "objects", "pack")
        try:
            names = os.listdir(pack_dir)
        except FileNotFoundError:
            return
        have = set(names)
        for name in names:
            orphan_pack = name.endswith(".pack") and name[:-5] + ".idx" not in have
            orphan_idx = name.endswith(".idx") and name[:-4] + ".pack" not in have
            if name.startswith("tmp") or name.endswith(".lock") or orphan_pack or orphan_idx:
                try:
                    os.unlink(os.path.join(pack_dir, name))
                except FileNotFoundError:
                    pass
        objects = os.path.join(self.git_dir, "objects")
        for name in os.listdir(objects):
            if name.startswith("tmp_"):
                try:
                    os.unlink(os.path.join(objects, name))
                except (FileNotFoundError, IsADirectoryError):
                    pass

    def sync_dirs(self) -> None:
        """fsync the directories whose entries a commit created (before the journal may rotate)."""
        fsync_dir(os.path.join(self.git_dir, "objects", "pack"))
        fsync_dir(os.path.join(self.git_dir, "refs", "heads"))
