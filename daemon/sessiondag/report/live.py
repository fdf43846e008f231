"""The live document of `sessiondag view`: the report's data document (document.py) kept current by
patches, not rebuilt per change, so a 100k-node session's viewer keeps up with its turns.

The bridge's Session object (its own, read-only) has a listener (store/events.py); when the daemon
announces a change (follow.py), the worker thread catches up with disk (`Session.refresh()`), and
the events it hears say which nodes are new or changed. New nodes go into the layout one by one
(layout.py `Layout.add`: rows are in seq order, so a new node is always the newest); the rows they
touch (their own, the row they fold into, a spawner's, HEAD's old and new, rows a new summary
covers) are built again with the file's own row builder (document.py `Rows`); the branch tips are
kept the same way (tips.py). A patch carries
those rows' columns and bodies, the segments that changed, the lane count, the summaries (when
they changed) and the meta. The branches and the usage roll-ups follow in their own patch, at most
as often as they take to compute (they walk every branch): a node appears without waiting for them.

Streamed text (`text_delta`, streaming.py) is flushed as `text` patches at most every TICK_S per
node while its row is running: deltas heard after its end was read are dropped (the daemon sends
them before the update that ends the call, but an earlier announcement may have had the worker
read that update first). A graph rebuilt from disk (`Reloaded`: the store could not follow
another process's journal rotation), a node older than the newest one seen or a failed patch
rebuilds the whole document and sends a `reset` saying why (the page fetches the document
again). Patches and resets are numbered (patch_log.py): a page catching up gets every one after
the version it has.

Nothing reads the disk unasked: every change reaches the worker as an announcement (follow.py),
which tests/report/test_report_follow.py holds for each way a session changes.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

import orjson

from ..context.ledger import UsageTotals, ledger_for
from ..core.graph import Graph
from ..core.model import ROOT, Call
from ..store.events import BranchNamed, Event, MetaChanged, NodeAppended, NodeUpdated, Reloaded
from ..store.session import Session
from ..sync.summary import TITLE_KEY, title_of
from .bodies import Limits
from .document import (CHUNK, COLS, EXACT_BRANCH_USAGE, Rows, _snip, build_with_layout, covered_ids, meta, segs_of,
                       summary_entry, usage)
from .layout import Layout, assign_lanes
from .page_types import Cell, Document, Patch, PatchRow, RowBody, RowCols
from .patch_log import PatchLog
from .streaming import Streams
from .tips import Tips

log = logging.getLogger(__name__)

TICK_S = 0.02            # changes closer than this are one patch
GLOBALS_SHARE = 4        # branches/usage wait at least this many times their last cost between runs


class Stale(Exception):
    """The patch cannot be made from what is kept: rebuild the whole document."""


class LiveDocument:
    def __init__(self, session: Session, limits: Limits):
        self.s, self.limits = session, limits
        self.cond = threading.Condition()
        self.patches = PatchLog()
        self.pending: list[Event] = []
        self.pending_lock = threading.Lock()
        self.dirty = False
        self.busy = False
        self.closed = False
        self.streams = Streams(limits)
        self.tip_usage: dict[str, UsageTotals] = {}
        self.globals_at = 0.0           # when branches/usage may run next
        self.globals_dirty = False
        self.stale_tips: set[int] = set()
        self.timings: dict[str, float] = {}
        self.resets: list[str] = []     # why each rebuild after the first was made
        session.add_listener(self._heard)
        with session.lock:
            session.refresh()
            self._rebuild()
        self.thread = threading.Thread(target=self._loop, name="sessiondag-view-live", daemon=True)
        self.thread.start()

    # --- what the bridge calls -----------------------------------------------------------------
    def changed(self) -> None:
        with self.cond:
            self.dirty = True
            self.cond.notify_all()

    def text(self, node_id: str, delta: str) -> None:
        with self.cond:
            self.streams.add(node_id, delta)
            self.cond.notify_all()

    def current(self) -> tuple[Document, list[list[RowBody]]]:
        with self.cond:
            return self.head, self.chunks

    def doc_bytes(self) -> bytes:
        with self.cond:
            return orjson.dumps(self.head)

    def chunk_bytes(self, i: int) -> bytes | None:
        with self.cond:
            return orjson.dumps(self.chunks[i]) if 0 <= i < len(self.chunks) else None

    def since(self, version: int, timeout: float) -> tuple[int, list[bytes]]:
        """The events after `version` (waiting up to `timeout` for one): (newest version, events);
        a reset when the patches after `version` are no longer kept."""
        with self.cond:
            self.cond.wait_for(lambda: self.patches.version > version or self.closed, timeout)
            return max(version, self.patches.version), self.patches.after(version)

    def settled(self, timeout: float) -> bool:
        """Wait until every change announced so far is in the document (tests, the bench)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.closed or not (self.dirty or self.busy or self.globals_dirty or
                                                                  self.streams.fresh()), timeout)

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.s.remove_listener(self._heard)

    # --- the worker ----------------------------------------------------------------------------
    def _heard(self, session: Session, events: list[Event]) -> None:
        with self.pending_lock:
            self.pending.extend(events)

    def _loop(self) -> None:
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.closed or self.dirty or bool(self.streams.fresh()) or
                                   self._globals_ready(), timeout=self._globals_wait())
                if self.closed:
                    return
                self.busy = True
            time.sleep(TICK_S)
            try:
                with self.cond:
                    dirty, self.dirty = self.dirty, False
                if dirty:
                    self._catch_up()
                self._flush_text()
                if self._globals_ready():
                    self._globals()
            except Exception:  # noqa: BLE001 - the viewer goes on: the whole document again
                log.exception("live document: a patch failed; building the whole document again")
                with self.s.lock:
                    self._rebuild("error")
            finally:
                with self.cond:
                    self.busy = False
                    self.cond.notify_all()

    def _globals_ready(self) -> bool:
        return self.globals_dirty and time.monotonic() >= self.globals_at

    def _globals_wait(self) -> float | None:
        return max(0.0, self.globals_at - time.monotonic()) + 0.001 if self.globals_dirty else None

    def _catch_up(self) -> None:
        t0 = time.perf_counter()
        with self.s.lock:
            self.s.refresh()
            with self.pending_lock:
                events, self.pending = self.pending, []
            if not events:
                return
            if any(isinstance(e, Reloaded) for e in events):
                self._rebuild("reloaded")     # the store rebuilt its graph from disk (several commits at once)
                return
            try:
                patch, mutate = self._patch(events)
            except Stale:
                self._rebuild("stale")
                return
        self._publish("patch", patch, mutate)
        self.timings["patch_ms"] = (time.perf_counter() - t0) * 1000

    def _rebuild(self, why: str = "start") -> None:
        """The whole document again (caller holds the session lock); a reset for open pages, saying
        `why` (reloaded: the store's graph was rebuilt from disk; stale: a node older than the newest
        seen; error: a patch failed)."""
        doc, lay = build_with_layout(self.s, self.limits, True)
        chunks = doc.pop("chunks")
        with self.cond:
            self.lay, self.head, self.chunks = lay, doc, chunks
            self.covered = covered_ids(self.s.graph)
            self.head_row = lay.rep.get(self.s.graph.head_id, -1)
            self.tip_usage = {b["head_id"]: b["usage"] for b in doc["branches"] if "usage" in b}
            self.tips = Tips([b["head_id"] for b in doc["branches"]])
            self.title = title_of(self.s.graph)
            self.globals_dirty = False
            first = self.patches.version == 0
            doc["chunk_count"] = len(chunks)
            doc["version"] = self.patches.rebuilt(None if first else why)
            if not first:
                self.resets.append(why)
            self.cond.notify_all()

    def _patch(self, events: list[Event]) -> tuple[Patch, Callable[[], None]]:
        """The patch of `events` (computed under the session lock) and what applies it to the kept
        document (run under self.cond)."""
        g, lay = self.s.graph, self.lay
        dirty: set[int] = set()
        new = [g.nodes[e.node_id] for e in events
               if isinstance(e, NodeAppended) and e.node_id in g.nodes and e.node_id not in lay.rep]
        for c in sorted(new, key=lambda c: c.seq):
            if c.seq <= lay.last_seq:
                raise Stale
            r = lay.add(g, c)
            self.tips.add(g, c)
            dirty.add(r if r >= 0 else lay.rep.get(c.id, -1))
            if c.is_spawn_root:
                dirty.add(lay.rep.get(c.caller, -1))
            self._touch_turn(g, lay, c, dirty)
        for e in events:
            if isinstance(e, NodeUpdated):
                if e.node_id not in lay.rep:
                    raise Stale
                dirty.add(lay.rep[e.node_id])
                if e.fields.get("status") not in (None, "running"):
                    with self.cond:
                        self.streams.drop(e.node_id)
                if e.node_id in g.nodes:
                    self._touch_turn(g, lay, g.nodes[e.node_id], dirty)
            elif isinstance(e, BranchNamed):
                self.globals_dirty = True
            elif isinstance(e, MetaChanged) and e.key == TITLE_KEY:
                self.title = ""
        covered = covered_ids(g)
        if covered != self.covered:
            dirty |= {lay.rep.get(i, -1) for i in covered ^ self.covered}
            self.covered = covered
        head_row = lay.rep.get(g.head_id, -1)
        if head_row != self.head_row:
            dirty |= {head_row, self.head_row}
            self.head_row = head_row
        dirty.discard(-1)
        assign_lanes(lay)
        rows = Rows(self.s, lay, self.limits)
        old_n = len(self.head["rows"]["id"])
        changed_rows: list[PatchRow] = []
        bodies: list[tuple[int, RowBody]] = []
        for r in sorted(dirty):
            vals, b = rows.row(r)
            with self.cond:
                shown = self.streams.synced(lay.rows[r].id) if lay.rows[r].status == "running" else None
            if shown is not None:
                b["text"] = shown
                vals = (*vals[:8], _snip(b))
            if r < old_n and self._same(r, vals, b):
                continue
            changed_rows.append((r, *vals))
            bodies.append((r, b))
        segs = segs_of(lay)
        old_segs = self.head["segs"]
        seg_changes = [[i, *x] for i, x in enumerate(segs) if i >= len(old_segs) or old_segs[i] != x]
        summaries: dict[int, list[int]] = {x[0]: x for x in self.head["summaries"]}
        for r, b in bodies:
            if lay.rows[r].name == "context/summary":
                summaries[r] = summary_entry(r, b)
        summary_list = [summaries[k] for k in sorted(summaries)]
        patch: Patch = {"n": len(lay.rows), "rows": changed_rows, "bodies": bodies, "segs": seg_changes,
                                 "lanes": lay.lanes, "meta": meta(self.s, self.limits.redactor, True, len(lay.rows),
                                                                  self._title(g))}
        if summary_list != self.head["summaries"]:
            patch["summaries"] = summary_list
        if changed_rows or seg_changes:
            self.globals_dirty = True
            self.stale_tips |= {r for r, *_ in changed_rows}

        def mutate() -> None:
            h = self.head
            for row in changed_rows:
                r = row[0]
                cells: tuple[Cell, ...] = row[1:]
                for name, v in zip(COLS, cells):
                    col = h["rows"][name]
                    if r < len(col):
                        col[r] = v
                    else:
                        col.append(v)
            for r, b in bodies:
                k, i = divmod(r, CHUNK)
                if k == len(self.chunks):
                    self.chunks.append([])
                ch = self.chunks[k]
                if i < len(ch):
                    ch[i] = b
                else:
                    ch.append(b)
            h["segs"] = segs
            h["lanes"] = lay.lanes
            h["summaries"] = summary_list
            h["meta"] = patch["meta"]
            h["chunk_count"] = len(self.chunks)
        return patch, mutate

    def _title(self, g: Graph) -> str:
        """The session's title, read again only while it has none or when it was set (title_of
        walks the nodes for the first message)."""
        if not self.title:
            self.title = title_of(g)
        return self.title

    @staticmethod
    def _touch_turn(g: Graph, lay: Layout, c: Call, dirty: set[int]) -> None:
        """The turn's user row shows the files the turn changed: build it again when its node
        changed (its checkpoint) or a node of the turn recorded files it wrote."""
        if not isinstance(c.metadata.get("workspace_files"), list):
            return
        seen = 0
        while c.caller in g.nodes and c.caller != ROOT and seen < 10_000:
            c = g.nodes[c.caller]
            seen += 1
        dirty.add(lay.rep.get(c.id, -1))

    def _same(self, r: int, vals: RowCols, b: RowBody) -> bool:
        cols = self.head["rows"]
        if any(cols[k][r] != v for k, v in zip(COLS, vals)):
            return False
        k, i = divmod(r, CHUNK)
        return k < len(self.chunks) and i < len(self.chunks[k]) and self.chunks[k][i] == b

    def _flush_text(self) -> None:
        with self.cond:
            fresh = self.streams.fresh()
            if not fresh:
                return
            out = []
            for nid in fresh:
                r = self.lay.row_of.get(nid)
                if r is None or self.lay.rows[r].status != "running":
                    if nid in self.lay.rep:    # a call folded into another row, or one already ended (its
                        self.streams.drop(nid)  # last deltas may come after its end was read): its output shows
                    continue
                p = self.streams.patch(nid, r)
                if p is not None:
                    out.append(p)
        if out:
            self._publish("patch", {"text": out}, lambda: self._apply_text(out))

    def _apply_text(self, out: list[list[int | str]]) -> None:
        cols = self.head["rows"]
        for r, at, s in out:
            k, i = divmod(int(r), CHUNK)
            if k < len(self.chunks) and i < len(self.chunks[k]):
                b = self.chunks[k][i]
                b["text"] = self.streams.by_node[b["id"]].sent if b["id"] in self.streams.by_node else b["text"]
                cols["snip"][int(r)] = _snip(b)

    def _globals(self) -> None:
        """The branches (each one's usage: HEAD's and those whose tip changed, again) and the usage
        roll-ups, when they changed."""
        t0 = time.perf_counter()
        with self.s.lock:
            g, lay = self.s.graph, self.lay
            ledger = ledger_for(self.s)
            head_tip = lay.rep.get(g.head_id, -1)
            stale, self.stale_tips = self.stale_tips | {head_tip}, set()
            cache = self.tip_usage

            def usage_of(head_id: str) -> UsageTotals:
                if head_id not in cache or lay.rep.get(head_id, -1) in stale:
                    cache[head_id] = ledger.usage("branch", head_id=head_id)["total"]
                return cache[head_id]
            br = self.tips.branches(g, lay, self.limits.redactor, usage_of, EXACT_BRANCH_USAGE)
            us = usage(ledger, lay)
        self.globals_dirty = False
        cost = time.perf_counter() - t0
        self.timings["globals_ms"] = cost * 1000
        self.globals_at = time.monotonic() + GLOBALS_SHARE * cost
        patch: Patch = {}
        if br != self.head["branches"]:
            patch["branches"] = br
        if us != self.head["usage"]:
            patch["usage"] = us

        def mutate() -> None:   # what head.update(patch) did: the two keys a globals patch holds
            if "branches" in patch:
                self.head["branches"] = patch["branches"]
            if "usage" in patch:
                self.head["usage"] = patch["usage"]
        if patch:
            self._publish("patch", patch, mutate)

    def _publish(self, kind: str, patch: Patch, mutate: Callable[[], None]) -> None:
        with self.cond:
            mutate()
            self.head["version"] = self.patches.add(kind, patch)
            self.cond.notify_all()
