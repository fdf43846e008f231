"""When a git snapshot is made durable: turn commits are checkpoints of the journal, synced in batches.

Every record is durable in the journal (fdatasync) before it is acknowledged; a turn commit folds
the journal into git, and the journal keeps every record the newest *synced* snapshot does not hold
(it is rotated only after a sync). So a commit needs no fsync of its own: it writes its pack, index
and ref through the page cache, and the sync point (before a journal rotation) makes all of them
durable at once — fsync of each pack and index written since the marker (those the marker does
not record as there when it was written: those were durable), of the pack directory, of the ref and its directory. Every reader of this boot sees the unsynced files (a killed process leaves the page
cache as it was); only a power loss or a kernel crash can take them.

That is what the marker `git/unsynced` is for. Before the first unsynced write after a sync, a
commit writes it durably, naming the boot (/proc/sys/kernel/random/boot_id) and the head at that
moment (durable: nothing was written unsynced since the last sync). Open finds it:
- same boot: nothing was lost; the snapshot is used as it is;
- another boot: power was lost with snapshots unsynced. The packs written since the marker that
  fail their checksums are moved to `git/lost/`; if the head cannot be read in full, the ref goes
  back to the marker's head (or to no commit: the journal then holds the whole session from ROOT),
  and the journal records after it are replayed as on every open. Then everything is synced and the
  marker removed. Nothing acknowledged is lost: the journal holds it.
Without a readable boot id, commits stay synced one by one (the old way, four fsyncs).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol

import orjson
from dulwich.objects import Commit, ObjectID, Tree
from dulwich.pack import Pack

from .durable_files import fsync_dir, fsync_path, write_file_atomic
from .recovery import _boot_id

if TYPE_CHECKING:   # dulwich's repository, for the types only (this module loads without it)
    from dulwich.object_store import BaseObjectStore
    from dulwich.repo import Repo

log = logging.getLogger(__name__)

MARKER = "unsynced"
MARKER_LIMIT = 4 << 20  # a marker names the pack files: thousands fit


def epoch() -> str:
    """What a power loss changes (the boot id), for a cache that names objects written unsynced:
    a row written in another epoch may name a blob the power loss took, so it is checked against
    the repository before it is used (the workspace stat cache: docs/checkpoints.md "Durability")."""
    return _boot_id()


class SnapshotSync:
    """The unsynced marker and the sync point of one session's repository (under the session lock)."""

    def __init__(self, git_dir: str, ref_path: str):
        self.git_dir = git_dir
        self.ref_path = ref_path
        self.marker = os.path.join(git_dir, MARKER)
        self.pack_dir = os.path.join(git_dir, "objects", "pack")

    @staticmethod
    def deferred() -> bool:
        """May commits skip their fsyncs? Only where a power loss can be told apart (a boot id)."""
        return _boot_id() != "-"

    def before_unsynced_write(self, head: bytes | None) -> None:
        """Before a commit writes anything unsynced: the marker exists, naming `head` (the ref now,
        durable) and this boot. One stat when it is already there."""
        if os.path.exists(self.marker):
            return
        body = {"boot": _boot_id(), "base": head.decode() if head else None, "packs": self._pack_files()}
        write_file_atomic(self.marker, orjson.dumps(body))

    def _pack_files(self) -> list[tuple[str, int, int]]:
        """The pack files there now, each as [name, inode, mtime_ns]: written just after a sync,
        every one of them is durable; what the sync point must fsync is anything not among them
        (a file's identity, not its time: a clock stepped back or a copied mtime fools a window)."""
        out: list[tuple[str, int, int]] = []
        try:
            names = sorted(os.listdir(self.pack_dir))
        except FileNotFoundError:
            return out
        for name in names:
            if name.startswith("pack-") and name.endswith((".pack", ".idx")):
                try:
                    st = os.stat(os.path.join(self.pack_dir, name))
                except FileNotFoundError:
                    continue
                out.append((name, st.st_ino, st.st_mtime_ns))   # a JSON array in the marker
        return out

    def unsynced_packs(self, marker: Mapping[str, object] | None) -> list[str] | None:
        """The pack files (names) not durable at `marker`: every pack file not recorded in it as the
        same file. None when the marker records none (torn, or written before it did): all may be."""
        known = marker.get("packs") if marker else None
        if not isinstance(known, list):
            return None
        durable = {tuple(e) for e in known if isinstance(e, list) and len(e) == 3}
        return [e[0] for e in self._pack_files() if tuple(e) not in durable]

    def read_marker(self) -> dict[str, Any] | None:
        try:
            with open(self.marker, "rb") as f:
                raw = f.read(MARKER_LIMIT)
        except FileNotFoundError:
            return None
        try:
            m = orjson.loads(raw)
        except orjson.JSONDecodeError:
            m = None
        if not isinstance(m, dict) or not isinstance(m.get("boot"), str):
            return {"boot": "", "base": None, "torn": True}  # written durably: torn means another boot
        return m

    def power_lost(self) -> dict[str, Any] | None:
        """The marker if it was written in another boot (snapshots written since may be damaged)."""
        m = self.read_marker()
        return m if m is not None and m.get("boot") != _boot_id() else None

    def sync(self) -> None:
        """The sync point: every pack and index written since the marker (those it does not record),
        the pack dir, the ref and its dir durable; then the marker goes (its removal durable too).
        Caller holds the session lock."""
        marker = self.read_marker()
        if marker is None:
            fsync_dir(self.pack_dir)  # nothing unsynced by commits; entries other writers made
            return
        # only a pack file not there when the marker was written can be unsynced: every one that
        # was is durable (the marker is written right after a sync, before any unsynced write)
        names = self.unsynced_packs(marker)
        if names is None:
            names = [n for n in os.listdir(self.pack_dir) if n.startswith("pack-") and n.endswith((".pack", ".idx"))]
        for name in sorted(names):
            try:
                fsync_path(os.path.join(self.pack_dir, name))
            except FileNotFoundError:
                pass
        fsync_dir(self.pack_dir)
        if os.path.exists(self.ref_path):
            fsync_path(self.ref_path)
            fsync_dir(os.path.dirname(self.ref_path))
        os.unlink(self.marker)
        fsync_dir(self.git_dir)

    def quarantine_damaged(self, marker_mtime: float, check: Callable[[str], None],
                           unsynced: list[str] | None = None) -> list[str]:
        """After a power loss: move the packs written since the marker that fail `check(basename)`
        to git/lost/ — those whose pack or index is in `unsynced` (SnapshotSync.unsynced_packs), or
        when the marker recorded none, those not older than `marker_mtime`. Returns their names."""
        lost = os.path.join(self.git_dir, "lost")
        moved = []
        for name in sorted(os.listdir(self.pack_dir)):
            if not (name.startswith("pack-") and name.endswith(".pack")):
                continue
            base = os.path.join(self.pack_dir, name[:-5])
            try:
                if unsynced is not None:
                    if name not in unsynced and name[:-5] + ".idx" not in unsynced:
                        continue
                elif os.stat(base + ".pack").st_mtime < marker_mtime:
                    continue
                check(base)
                continue
            except Exception as e:  # torn, zeroed, missing index: not usable
                log.warning("pack %s damaged by a power loss (%s): moved to git/lost/", name, e)
            os.makedirs(lost, mode=0o700, exist_ok=True)
            for ext in (".pack", ".idx"):
                if os.path.exists(base + ext):
                    os.replace(base + ext, os.path.join(lost, os.path.basename(base) + ext))
            moved.append(name)
        return moved


def _complete_since(store: BaseObjectStore, head: bytes, base: str | None) -> None:
    """Every object the commits after `base` up to `head` reach is there (a workspace checkpoint's
    pack is written apart from the commit naming it: one may outlive the other). KeyError if not."""
    seen: set[bytes] = set()
    todo, stop = [head], base.encode() if base else None
    while todo:
        sha = todo.pop()
        if sha == stop or sha in seen:
            continue
        seen.add(sha)
        obj = store[ObjectID(sha)]   # dulwich's NewType of bytes
        if isinstance(obj, Commit):      # the store's object of type_name b"commit"
            todo.extend(obj.parents)
            todo.append(obj.tree)
        elif isinstance(obj, Tree):
            for e in obj.items():
                if e.mode == 0o40000:
                    todo.append(e.sha)
                elif e.mode != 0o160000 and e.sha not in seen:
                    seen.add(e.sha)
                    if e.sha not in store:
                        raise KeyError(f"object {e.sha.decode()} under {sha.decode()} is missing")


class Recovered(Protocol):
    """What a power-loss recovery uses of the session's GitSnapshots (store/gitstore.py imports
    this module: naming its class would be an import cycle)."""

    @property
    def durability(self) -> SnapshotSync: ...

    @property
    def repo(self) -> Repo: ...

    def refresh(self) -> None: ...

    def head(self) -> bytes | None: ...

    def head_text(self) -> str: ...

    def reset_ref(self, sha: bytes | None) -> None: ...

    def load_meta(self, commit_sha: bytes) -> tuple[object, Tree]: ...

    def load_chunks(self, commit_sha: bytes) -> object: ...

    def iter_chunks(self, root: Tree) -> Iterable[object]: ...


def recover(git: Recovered) -> bool:
    """At open, under the session lock (`git`: the session's GitSnapshots): if the marker says power
    was lost with snapshots unsynced, drop what it damaged and go back to a head that reads in
    full (see the module doc). True if it acted."""
    sync: SnapshotSync = git.durability
    marker = sync.power_lost()
    if marker is None:
        return False
    since = os.stat(sync.marker).st_mtime - 2  # packs a little older than the marker are checked too
    git.refresh()
    fmt = git.repo.object_store.object_format

    def check(base: str) -> None:
        for ext, magic in ((".idx", b"\377tOc"), (".pack", b"PACK")):  # a zeroed file never reaches dulwich
            with open(base + ext, "rb") as f:
                if f.read(4) != magic:
                    raise ValueError(f"{os.path.basename(base)}{ext} does not start like one")
        p = Pack(base, object_format=fmt)
        try:
            p.check()
        finally:
            p.close()
    git.refresh()
    moved = sync.quarantine_damaged(since, check, sync.unsynced_packs(marker))
    try:
        head = git.head()
        if head is None and marker.get("base"):  # an empty or missing ref file: it named at least the base
            raise ValueError("the ref names no commit")
        if head is not None:
            _, root = git.load_meta(head)
            git.load_chunks(head)
            for _ in git.iter_chunks(root):
                pass
            _complete_since(git.repo.object_store, head, marker.get("base"))
    except Exception as e:
        if marker.get("torn"):
            raise  # no known base to go back to: reported corrupt, nothing changed
        base = marker.get("base")
        log.warning("snapshot %s unreadable after a power loss (%s): back to %s; the journal holds the rest",
                    git.head_text(), e, base or "no snapshot")
        git.reset_ref(base.encode() if base else None)
    git.refresh()
    log.warning("power loss recovered in %s (%d damaged pack(s) moved to git/lost/)", sync.git_dir, len(moved))
    sync.sync()
    return True
