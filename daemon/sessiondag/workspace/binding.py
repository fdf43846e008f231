"""Working-dir binding: every open session is bound to its working dir while that dir exists.

One recursive watcher over the bound dirs (file changes) and one non-recursive watcher over their
parents (a deleted or renamed root stops being watched by the recursive one; its parent sees it go
and come back). Both restart when the set of dirs changes. The daemon gets three callbacks:
`on_unbind(sid, wd)`, `on_rebind(sid, wd)`, `on_changes(sid, [(relpath, kind)])`.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Awaitable, Callable

import anyio

from .changes import KINDS, interesting, not_in_git
from .notify import Changes
from .watcher import RestartableWatch


def _ident(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    import stat as _stat
    return (st.st_dev, st.st_ino) if _stat.S_ISDIR(st.st_mode) else None


BARRIER_STEP_MS = 5
"""How often the working dirs' watcher looks for changes (watchfiles' step): a batch is handed over
once a step finds no new change, so the barrier's event reaches the barrier one to two steps after
it was made (the watcher path's snapshot waits that long). 20 ms (the other watchers) put about
30 ms of waiting before every turn's snapshot; 5 ms costs about 0.4% of a core while idle
(docs/checkpoints.md)."""


class WorkspaceBinding:
    def __init__(self, on_unbind: Callable[[str, str], Awaitable[None]],
                 on_rebind: Callable[[str, str], Awaitable[None]],
                 on_changes: Callable[[str, list[tuple[str, str]]], Awaitable[None]]):
        self.on_unbind, self.on_rebind, self.on_changes = on_unbind, on_rebind, on_changes
        self.dirs: dict[str, str] = {}                 # session id -> working dir
        self.ident: dict[str, tuple[int, int] | None] = {}  # working dir -> (dev, inode) seen
        self.exclude: list[str] = []                   # never attribute changes under these (state dir)
        self.tree = RestartableWatch("working-dirs", self._tree_paths, self._on_tree, recursive=True,
                                     watch_filter=not_in_git, on_watching=self._watching, step=BARRIER_STEP_MS)
        # workspace checkpoints (checkpointer.py): every change but .git's, and the watched set
        self.on_dirty: Callable[[str, list[str]], None] | None = None
        self.on_watching: Callable[[frozenset[str]], None] | None = None
        self.barrier = Barrier()
        self.parents = RestartableWatch("working-dir-parents", self._parent_paths, self._on_parents,
                                        recursive=False)

    # --- the bound set -----------------------------------------------------------------------
    def add(self, sid: str, wd: str | None) -> None:
        """Bind `sid` to `wd` (again: a rebind moves it, the old dir is forgotten if unused)."""
        if not wd or self.dirs.get(sid) == wd:
            return
        old = self.dirs.get(sid)
        self.dirs[sid] = wd
        if old is not None and old not in self.dirs.values():
            self.ident.pop(old, None)
        if wd not in self.ident:
            self.ident[wd] = _ident(wd)
        self.tree.restart()
        self.parents.restart()

    def remove(self, sid: str) -> None:
        wd = self.dirs.pop(sid, None)
        if wd is not None and wd not in self.dirs.values():
            self.ident.pop(wd, None)
            self.tree.restart()
            self.parents.restart()

    async def wait_watching(self, sid: str, timeout: float = 5.0) -> bool:
        """Wait until the session's dir (if it exists) is under the recursive watch."""
        wd = self.dirs.get(sid)
        if wd is None or self.ident.get(wd) is None:
            return True
        return await self.tree.wait_watching(lambda w: wd in w, timeout)

    def is_bound(self, sid: str) -> bool:
        wd = self.dirs.get(sid)
        return wd is None or os.path.isdir(wd)

    def _tree_paths(self) -> list[str]:
        dirs = [wd for wd in set(self.dirs.values()) if self.ident.get(wd) is not None]
        return dirs + ([self.barrier.dir] if dirs and self.barrier.dir else [])

    def _watching(self, watching: frozenset[str]) -> None:
        if self.on_watching is not None:
            self.on_watching(frozenset(w for w in watching if w != self.barrier.dir))

    def _parent_paths(self) -> list[str]:
        return [os.path.dirname(wd) for wd in set(self.dirs.values())]

    # --- events ------------------------------------------------------------------------------
    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.tree.run)
            tg.start_soon(self.parents.run)

    def close(self) -> None:
        self.tree.close()
        self.parents.close()
        self.barrier.close()

    async def rescan(self) -> None:
        """Compare each dir with what we saw last; announce unbind/rebind, restart on any change."""
        for wd in list(set(self.dirs.values())):
            now, before = _ident(wd), self.ident.get(wd)
            if now == before:
                continue
            self.ident[wd] = now
            sids = [s for s, d in self.dirs.items() if d == wd]
            self.tree.restart()
            if now is not None:  # announce a rebind only once the new dir is really watched
                await self.tree.wait_watching(lambda w: wd in w)
            for sid in sids:
                if before is not None and now is None:
                    await self.on_unbind(sid, wd)
                elif before is None and now is not None:
                    await self.on_rebind(sid, wd)

    async def _on_parents(self, changes: Changes) -> None:
        await self.rescan()

    async def _on_tree(self, changes: Changes) -> None:
        # no rescan here: it may restart this very watcher and wait for it (the parents watcher
        # sees every root that goes or comes back)
        by_sid: dict[str, list[tuple[str, str]]] = {}
        dirty: dict[str, list[str]] = {}
        passed = []
        for change, path in sorted(changes, key=lambda c: (c[1], int(c[0]))):
            if self.barrier.passes(path):
                passed.append(path)
                continue
            kind = KINDS.get(change)
            if kind is None or any(path == x or path.startswith(x + os.sep) for x in self.exclude):
                continue
            keep = interesting(change, path)
            for sid, wd in self.dirs.items():
                if path.startswith(wd + os.sep) and self.ident.get(wd) is not None:
                    dirty.setdefault(sid, []).append(os.path.relpath(path, wd))
                    if keep:
                        by_sid.setdefault(sid, []).append((os.path.relpath(path, wd), kind))
        if self.on_dirty is not None:
            for sid, rels in dirty.items():
                self.on_dirty(sid, rels)
        for path in passed:   # every change before the barrier's file is marked dirty by now
            self.barrier.arrived(path)
        for sid, items in by_sid.items():
            await self.on_changes(sid, items)


class Barrier:
    """Proof that the watcher has delivered every change made before a moment: a file created in a
    directory the same watcher watches comes back through the same (ordered) inotify queue, so once
    its event is handled, every earlier change was (workspace checkpoints wait on it before trusting
    their dirty paths). `dir` is set by the daemon (a directory of its state dir).

    A barrier's file is removed at the start of the next wait (or at `close`), not as soon as it
    passed: its removal is an event too, and handled then it would keep the watcher (and the GIL)
    busy while the snapshot that waited runs; removed later, it rides in the next barrier's batch."""

    def __init__(self) -> None:
        self.dir: str | None = None
        self._waiting: dict[str, threading.Event] = {}
        self._passed: list[str] = []      # files of barriers waited for, to remove
        self._mutex = threading.Lock()

    def passes(self, path: str) -> bool:
        return self.dir is not None and os.path.dirname(path) == self.dir

    def arrived(self, path: str) -> None:
        with self._mutex:
            ev = self._waiting.get(path)
        if ev is not None:
            ev.set()

    def wait(self, timeout: float = 2.0) -> bool:
        """(From a worker thread.) True once the watcher has shown everything up to now."""
        if self.dir is None:
            return False
        path = os.path.join(self.dir, uuid.uuid4().hex)
        ev = threading.Event()
        with self._mutex:
            self._waiting[path] = ev
        self.close()
        try:
            with open(path, "wb"):
                pass
            return ev.wait(timeout)
        except OSError:
            return False
        finally:
            with self._mutex:
                self._waiting.pop(path, None)
                self._passed.append(path)

    def close(self) -> None:
        """Remove the files of the barriers waited for so far."""
        with self._mutex:
            passed, self._passed = self._passed, []
        for p in passed:
            try:
                os.unlink(p)
            except OSError:
                pass
