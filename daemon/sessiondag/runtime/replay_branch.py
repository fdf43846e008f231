"""Teacher-forced replay of a whole branch segment (docs/replay.md).

`replay_branch(w, rt, from_node, to_node, ov, mode)` rebuilds the chain from `from_node` down to
`to_node` on a new branch forked at `from_node`'s predecessor. The recorded user messages (and
system-prompt nodes) are copied as they were: the teacher forcing. Every turn's model calls are
made again with the replaying provider and the overrides (system prompt, provider / model /
sampling), rendered from the new branch as it grows, until the model answers without tool calls;
then the next recorded turn follows.

- `recorded_tools`: a tool call the new model makes that matches a recorded one of the segment
  (same tool, same arguments, each recorded call used once) gets the recorded result, status
  included, as a new tool node (`metadata.recorded_from`) — nothing runs. The first call without a
  recorded counterpart stops the replay there: `stopped` says at which new model call, which of
  its tool calls, and why.
- `live_tools`: the tools run (the runtime's tools and permission rules), like a turn's. With
  workspace checkpoints, the files are first restored to what they were just before `from_node`
  (runtime/before_call.py; a restore like any other: refused typed on a dirty tree, undoable).

Edits (`Overrides.edits`, by message index) apply to every request the replay sends: the branch
only grows, so message N is the same message in each (checked against the first call's request
before anything is written).

The original branch is untouched; HEAD stays where it was; the new tip is named; one commit.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

from ..context.messages import replay_messages, with_instructions
from ..context.renderer import renderer_for
from ..core.errors import NoCheckpointError, ReplayRefusedError
from ..core.model import ROOT, Call, error_metadata
from .calls import model_call
from .checkpoints import restore
from .context import SessionWriter, session_context
from .errors import RunCancelled
from .loop import run_tool
from .replay import REPLAY_KEY, REPLAY_OF, Overrides, apply_overrides, replayable
from .turns import turn_lock

if TYPE_CHECKING:
    from ..core.graph import Graph
    from ..store.session import Session
    from .providers.base import ToolCall
    from .runtime import Runtime

MODES = ("recorded_tools", "live_tools")


def _segment(s: Session, from_node: str, to_node: str | None) -> list[Call]:
    g = s.graph
    start = s.get_node(from_node)
    if to_node is None:
        on_head = any(c.id == from_node for c in g.get_branch(g.head_id)) if g.head_id != ROOT else False
        to_node = g.head_id if on_head else _first_tip(g, from_node)
    chain = g.get_branch(to_node)
    ids = [c.id for c in chain]
    if from_node not in ids:
        raise ReplayRefusedError(from_node, "not_on_branch", f"it is not on the branch ending at {to_node}")
    seg = chain[ids.index(from_node):]
    if start.role not in ("user", "llm") or (start.role == "llm" and start.predecessor is None):
        raise ReplayRefusedError(from_node, "not_a_turn_node", "a branch replay starts at a user message or a "
                                 "model call of a chat chain")
    return seg


def _first_tip(g: Graph, node_id: str) -> str:
    cur = node_id
    for _ in range(len(g.nodes)):  # bounded: each step goes to a later node
        kids = [k for k in g.children_by_predecessor(cur) if g.nodes[k].name != "context/summary"]
        if not kids:
            return cur
        cur = min(kids, key=lambda k: g.nodes[k].seq)
    return cur


def _is_turn_start(c: Call) -> bool:
    return c.role == "user" and c.caller == ROOT


def replay_branch(w: SessionWriter, rt: Runtime, from_node: str, to_node: str | None = None,
                  ov: Overrides | None = None, mode: str = "recorded_tools", name: str | None = None) -> dict[str, Any]:
    if mode not in MODES:
        raise ValueError(f"mode is one of {', '.join(MODES)}")
    ov = ov or Overrides()
    with session_context(w.session_id, store=w.store, runtime=rt) as h:  # live tools run in its frames
        return _replay_branch(h.writer, rt, from_node, to_node, ov, mode, name)


def _replay_branch(w: SessionWriter, rt: Runtime, from_node: str, to_node: str | None, ov: Overrides, mode: str,
                   name: str | None) -> dict[str, Any]:
    with turn_lock(w):
        with w.lock:
            s = w.session
            seg = _segment(s, from_node, to_node)
            for c in seg:
                if c.role == "llm" and c.predecessor is not None:
                    replayable(s, c.id)  # every call's manifest can be replayed, or nothing is written
            head_before = s.head_id
            pool = [c for c in seg if c.role == "code" and "tool_call_id" in c.metadata]
            if ov.edits:
                _check_edits(s, rt, seg, ov)
        files = _restore_first(s, from_node) if mode == "live_tools" else None
        run = _Run(w, rt, ov, mode, pool)
        try:
            run.go(seg, seg[0].predecessor)
        finally:
            with w.lock:
                branch = None
                if run.new_ids:
                    branch = name or f"replay-{run.new_ids[-1][:8]}"
                    s.name_branch(run.tip, branch)
                if s.head_id != head_before:
                    s.checkout(head_before)
                s.commit_turn(f"replay of the branch from {from_node} ({mode})")
        return {"branch": branch, "head_id": run.tip, "node_ids": run.new_ids, "calls": run.calls,
                "matched_tools": run.matched, "stopped": run.stopped, "mode": mode, "files": files}


def _check_edits(s: Session, rt: Runtime, seg: list[Call], ov: Overrides) -> None:
    """Refuse (bad_edit) an edit outside the first call's request, before anything is written."""
    first = next((c for c in seg if c.role == "llm" and c.predecessor is not None), None)
    if first is None:
        return
    fmt = getattr(rt.provider, "wire_format", "openai")
    apply_overrides(first.id, replay_messages(s, first.id, format=fmt), Overrides(system=ov.system, edits=ov.edits))


def _restore_first(s: Session, from_node: str) -> dict[str, Any] | None:
    """Live tools see the files as they were just before `from_node` (a restore with its undo point);
    None without checkpoints, {skipped: why} when no snapshot holds that state."""
    if s.snapshots is None or not s.info.get("working_dir"):
        return None
    try:
        files: dict[str, Any] | None = restore(s, from_node, "files", before=True)["files"]
        return files
    except NoCheckpointError as e:
        return {"skipped": str(e)}


class _Run:
    def __init__(self, w: SessionWriter, rt: Runtime, ov: Overrides, mode: str, pool: list[Call]):
        self.w, self.rt, self.ov, self.mode, self.pool = w, rt, ov, mode, list(pool)
        self.tip = ""
        self.new_ids: list[str] = []
        self.calls = self.matched = self.tool_calls = 0
        self.stopped: dict[str, Any] | None = None
        self.turn = 0
        self.specs = [t.spec() for t in getattr(rt, "tools", ())]
        self.by_name = {t.name: t for t in getattr(rt, "tools", ())}

    def _append(self, c: Call) -> Call:
        n = self.w.append(c)
        self.new_ids.append(n.id)
        self.tip = n.id
        self.rt.emit("node_appended", session_id=self.w.session_id, node=n.to_dict())
        return n

    def go(self, seg: list[Call], fork_at: str | None) -> None:
        self.tip = fork_at or ROOT
        turn_start = seg[0].caller if seg[0].role == "llm" else None
        i = 0
        while i < len(seg) and self.stopped is None:
            c = seg[i]
            if _is_turn_start(c) or (c.role == "code" and c.caller == ROOT and "tool_call_id" not in c.metadata):
                md = {**c.metadata, REPLAY_OF: c.id}
                n = self._append(Call(c.role, c.name, output=c.output, caller=ROOT, predecessor=self.tip, metadata=md))
                if _is_turn_start(c):
                    turn_start = n.id
                    self.turn += 1
                i += 1
                continue
            if c.role == "llm" and c.predecessor is not None and turn_start is not None:
                self._turn(c, turn_start)
                i += 1
                while i < len(seg) and not _is_turn_start(seg[i]):
                    i += 1  # the rest of the recorded turn: the new model made its own calls
                continue
            i += 1

    def _turn(self, first: Call, turn_start: str) -> None:
        fmt = getattr(self.rt.provider, "wire_format", "openai")
        manifest = first.metadata.get("render_manifest") or {}
        for step in range(getattr(self.rt, "max_steps", 40)):
            with self.w.lock:
                messages, m = renderer_for(self.w.session).messages(self.w.session, self.tip, format=fmt)
            messages = apply_overrides(first.id, with_instructions(list(messages), manifest.get("instructions")),
                                       Overrides(system=self.ov.system, edits=self.ov.edits))
            extra = {REPLAY_OF: first.id, REPLAY_KEY: {**self.ov.to_dict(), "mode": self.mode, "step": step}}
            try:
                llm, comp = model_call(self.w, self.rt, messages, self.specs, caller=turn_start,
                                       predecessor=self.tip, manifest={**m, "instructions": manifest.get("instructions")}
                                       if manifest.get("instructions") else m, extra=extra)
            except BaseException as e:
                nid = getattr(e, "sessiondag_node_id", None)
                if nid is not None:
                    self.new_ids.append(nid)
                    self.tip = nid
                if isinstance(e, RunCancelled):
                    raise
                self.stopped = {"at": nid, "turn": self.turn, "call": None, "tool_call_number": None, "tool": None,
                                "arguments": None, "reason": f"the model call failed: {type(e).__name__}: {e}"}
                return
            self.calls += 1
            self.new_ids.append(llm.id)
            self.tip = llm.id
            if not comp.tool_calls:
                return
            for k, tc in enumerate(comp.tool_calls):
                if not self._tool(llm, k, tc):
                    return
        self.stopped = {"at": self.tip, "turn": self.turn, "call": None, "tool_call_number": None, "tool": None,
                        "arguments": None, "reason": "max_steps"}

    def _tool(self, llm: Call, k: int, tc: ToolCall) -> bool:
        base = {"tool_call_id": tc.id}
        self.tool_calls += 1
        if self.mode == "live_tools":
            t = self._append(Call("code", tc.name, input=tc.arguments, caller=llm.id, predecessor=self.tip,
                                  status="running", metadata=base))
            wd = self.w.session.info.get("working_dir") or "."
            try:
                run_tool(self.w, self.rt, self.by_name.get(tc.name), t, tc.arguments, wd)
            except RunCancelled:
                raise
            except Exception as e:  # noqa: BLE001 - run_tool records tool failures itself; anything else
                self.w.update(t.id, status="error", metadata={"error": error_metadata(e, traceback.format_exc())})
            return True
        match = next((r for r in self.pool if r.name == tc.name and r.input == tc.arguments), None)
        if match is None:
            self.stopped = {"at": llm.id, "turn": self.turn, "call": k, "tool_call_number": self.tool_calls,
                            "tool": tc.name, "arguments": tc.arguments,
                            "reason": f"no recorded call of {tc.name} with these arguments"}
            return False
        self.pool.remove(match)
        self.matched += 1
        self._append(Call("code", tc.name, input=tc.arguments, caller=llm.id, predecessor=self.tip,
                          output=match.output, status=match.status,
                          metadata={**base, "recorded_from": match.id}))
        return True
