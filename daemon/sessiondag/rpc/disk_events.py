"""What the daemon does when the disk changes under it (a mixin of rpc/daemon.py's Daemon):

- working dirs (workspace/binding.py): unbind / rebind announcements, file changes attributed to the
  open turn (or held for the next one);
- other processes' writes: the directories of subscribed sessions are watched (journal.log only);
  a change catches the session up, which fires the store listeners and so the notifications;
- sessions deleted under the daemon: the sessions directory is watched (non-recursive) and each write
  checks, under the session lock and after its fdatasync, that the journal it wrote is still the one
  at the session's path (`journal_present`). A deleted session is buried (writes answer
  `session_deleted`), announced (`session/did_delete`) and closed once nothing uses it.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ..core.errors import SessionDeletedError
from ..core.model import ROOT
from ..workspace.changes import merge

log = logging.getLogger("sessiondag.daemon")


class DiskEvents:
    async def session_deleted(self, sid: str, detail: str) -> None:
        """The session's directory is gone (reset by another process, rm -rf): refuse further writes
        (`session_deleted`), tell the subscribers, and close it once nothing uses it."""
        if sid in self.table.deleted or sid not in self.sessions:
            return
        log.warning("session %s was deleted under the daemon: %s", sid, detail)
        self.table.bury(sid, self.table.idents.get(sid))
        self.broadcast(sid, "session/did_delete", {"session_id": sid, "detail": detail})
        for conn in list(self.subscribers.get(sid, ())):
            self.unsubscribe(conn, sid)
        if not self.table.in_use(sid):
            self.drop(sid, "deleted")

    async def check_present(self, sid: str) -> None:
        """Raise SessionDeletedError if the session's directory went away (announcing it once)."""
        if self.table.gone(sid) or sid in self.table.deleted:
            await self.session_deleted(sid, "the session directory vanished")
            raise SessionDeletedError(sid)

    # --- working dirs ------------------------------------------------------------------------
    async def _on_unbind(self, sid: str, wd: str) -> None:
        log.info("session %s unbound: %s is gone", sid, wd)
        self.broadcast(sid, "session/did_unbind", {"session_id": sid, "working_dir": wd})

    async def _on_rebind(self, sid: str, wd: str) -> None:
        log.info("session %s rebound: %s is back", sid, wd)
        self.broadcast(sid, "session/did_rebind", {"session_id": sid, "working_dir": wd})

    @staticmethod
    def _open_turn_node(s: Any) -> str | None:
        """The ROOT-level user node that opened the current (uncommitted) turn, if any."""
        if not s.open_turn:
            return None
        g = s.graph
        for nid in reversed(getattr(s, "_turn_new", ())):
            c = g.nodes.get(nid)
            if c is not None and c.role == "user" and c.caller == ROOT and c.predecessor is not None:
                return nid
        return None

    async def _on_workspace_changes(self, sid: str, items: list[tuple[str, str]]) -> None:
        s = self.sessions.get(sid)
        if s is None:
            return

        def work() -> None:
            nid = self._open_turn_node(s)
            if nid is None:
                self.pending_changes[sid] = merge(self.pending_changes.get(sid, []), items)
                return
            cur = s.graph.nodes[nid].metadata.get("workspace_changes") or []
            s.update(nid, metadata={"workspace_changes": merge(cur, items)})
        await self.run_session(s, work)

    async def _attach_pending(self, sid: str, node_id: str) -> None:
        s = self.sessions.get(sid)
        if s is None:
            return

        def work() -> None:
            pending = self.pending_changes.pop(sid, None)
            if not pending:
                return
            cur = s.graph.nodes[node_id].metadata.get("workspace_changes") or []
            s.update(node_id, metadata={"workspace_changes": merge(cur, [(e["path"], e["change"]) for e in pending])})
        try:
            await self.run_session(s, work)
        except Exception:  # noqa: BLE001
            log.exception("attaching workspace changes to %s/%s failed", sid, node_id)

    # --- other processes' writes -------------------------------------------------------------
    def _session_dirs(self) -> list[str]:
        """Subscribed sessions' dirs, loaded or not (fd pressure may close a subscribed session)."""
        return [self.store.path_of(sid) for sid in self.subscribers]

    async def _on_sessions_dir(self, changes: set[tuple[Any, str]]) -> None:
        for sid in {os.path.basename(path) for _, path in changes}:
            if self.table.gone(sid):
                await self.session_deleted(sid, "the session directory was removed or replaced")

    async def _on_session_dirs(self, changes: set[tuple[Any, str]]) -> None:
        sids = {os.path.basename(os.path.dirname(path)) for _, path in changes}
        for sid in sids:
            if self.table.gone(sid):
                await self.session_deleted(sid, "the session directory was removed or replaced")
            elif sid in self.subscribers:
                await self._catch_up(sid)

    async def _catch_up(self, sid: str) -> None:
        """Another process wrote a subscribed session: catching up fires the listeners for every
        new record; a reload (a rotation elsewhere, or the session was closed here under fd
        pressure) is announced as a `reload` change."""
        s = self.sessions.get(sid)
        if s is None:
            if not os.path.isdir(self.store.path_of(sid)):
                self.broadcast(sid, "session/did_delete",
                               {"session_id": sid, "detail": "the session directory was removed"})
                for conn in list(self.subscribers.get(sid, ())):
                    self.unsubscribe(conn, sid)
                return
            try:
                s = await self.get_session(sid)
            except Exception:  # noqa: BLE001
                log.warning("reloading subscribed session %s failed", sid, exc_info=True)
                return
            reload = True
        else:
            reload = False

        def refresh() -> tuple[bool, str]:
            before = s._graph
            g = s.graph
            return g is not before, g.head_id
        try:
            reloaded, head = await self.run_session(s, refresh)
        except Exception:  # noqa: BLE001
            log.warning("refreshing session %s failed", sid, exc_info=True)
            return
        if reload or reloaded:  # records may have been folded away: clients re-read what they cache
            self.broadcast(sid, "session/did_change",
                           {"session_id": sid, "head_id": head, "changes": [{"kind": "reload"}]})


def journal_present(session: Any) -> bool:
    """Under the session lock: is the journal we hold open still the one at the session's path?
    (A rotation happens under the lock, so a different inode or no file means deleted.)"""
    j = session.journal
    try:
        st = os.stat(j.path)
    except FileNotFoundError:
        return False
    return j.inode is None or st.st_ino == j.inode
