"""A hypothesis state machine over a real on-disk session against a small reference model.

The model knows only edges, the head rules and the main-line rule (core/main_line.py, written here
again from its doc: the oldest child, unless its step failed and a later retry of it completed);
after every step the store's head, branches and
branch walks must agree with it. Refused operations must raise and leave the files untouched.
"""

import hashlib
import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sessiondag import Call, ROOT
from sessiondag.core.errors import (HeadMismatchError, InvalidNodeError, NotFoundError,
                                    PredecessorMissingError)
from sessiondag.core.model import usage_of
from sessiondag.store import SessionStore

SLOW = os.environ.get("SESSIONDAG_SLOW") == "1"


class Model:
    def __init__(self):
        self.nodes = {}      # id -> dict(role, caller, pred, lane, seq, status, spawn)
        self.head = ROOT
        self.names = {}      # tip -> name
        self.seq = 0

    def chain(self, nid):
        n = self.nodes[nid]
        return n["pred"] is not None or n["spawn"]

    def chain_children(self, nid):
        return [k for k, n in self.nodes.items() if n["pred"] == nid]

    def add(self, nid, role, caller, pred, status="completed", spawn=False, name="msg", output=None):
        self.seq += 1
        if pred is None:
            lane = nid if spawn else None
        else:
            lane = "main" if pred == ROOT else self.nodes[pred]["lane"]
        follows = pred is not None and pred in self.names and not self.chain_children(pred)
        self.nodes[nid] = dict(role=role, caller=caller, pred=pred, lane=lane, seq=self.seq,
                               status=status, spawn=spawn, name=name, output=output)
        if pred is None:
            return
        if follows:
            self.names[nid] = self.names.pop(pred)
        if lane == "main" or self.head == pred:
            self.head = nid

    def branch(self, nid):
        out = []
        while nid != ROOT:
            out.append(nid)
            n = self.nodes[nid]
            if n["spawn"]:
                break
            nid = n["pred"]
        return out[::-1]

    def tips(self):
        return {k for k in self.nodes if self.chain(k) and not self.chain_children(k)}

    def starts_turn(self, nid):
        n = self.nodes[nid]
        return n["role"] == "user" and n["caller"] == ROOT and n["pred"] is not None

    def step_status(self, nid):
        """How the step from nid ends: the status of its last node before the next turn."""
        if nid not in self._steps:
            kids = self.chain_children(nid)
            nxt = self.main_child(kids) if kids else None
            done = nxt is None or self.starts_turn(nxt)
            self._steps[nid] = self.nodes[nid]["status"] if done else self.step_status(nxt)
        return self._steps[nid]

    def main_child(self, kids):
        kids = sorted(kids, key=lambda k: self.nodes[k]["seq"])
        first = self.nodes[kids[0]]
        if self.step_status(kids[0]) not in ("error", "cancelled"):
            return kids[0]
        for k in kids[1:]:
            n = self.nodes[k]
            same = n["role"] == first["role"] and n["name"] == first["name"] and (
                first["role"] != "user" or n["output"] == first["output"])
            if same and self.step_status(k) == "completed":
                return k
        return kids[0]

    def main_tip(self):
        cur, self._steps = ROOT, {}
        while True:
            kids = self.chain_children(cur)
            if not kids:
                return None if cur == ROOT else cur
            cur = self.main_child(kids)


def fingerprint(path):
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for f in sorted(files):
            if f == "lock":
                continue
            p = os.path.join(root, f)
            h.update(p.encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


class SessionMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="sdsm-")
        self.store = SessionStore(self.tmp)
        self.store.start_session("sm", working_dir=self.tmp)
        self.s = self.store.session("sm")
        self.m = Model()

    def teardown(self):
        import shutil
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- helpers ---------------------------------------------------------------------------
    def chain_nodes(self):
        return sorted(k for k in self.m.nodes if self.m.chain(k))

    def refused(self, fn, exc):
        before = fingerprint(self.s.path)
        with pytest.raises(exc):
            fn()
        assert fingerprint(self.s.path) == before, "a refused operation changed the files"

    # --- rules -----------------------------------------------------------------------------
    @rule(role=st.sampled_from(["user", "llm"]), cas=st.booleans())
    def extend(self, role, cas):
        pred = self.m.head
        md = {"gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 2} if role == "llm" else {}
        c = self.s.append(Call(role, "msg", output="x" * 10, predecessor=pred, metadata=md),
                          expected_head=self.m.head if cas else None)
        self.m.add(c.id, role, ROOT, pred, output="x" * 10)

    @precondition(lambda self: self.m.nodes)
    @rule(data=st.data(), role=st.sampled_from(["user", "llm"]))
    def fork(self, data, role):
        target = data.draw(st.sampled_from(self.chain_nodes()))
        pred = self.m.nodes[target]["pred"]
        if pred is None:  # forking a spawn root: extend it instead
            pred = target
        c = self.s.append(Call(role, "fork", predecessor=pred))
        self.m.add(c.id, role, ROOT, pred, name="fork")

    @precondition(lambda self: any(n["pred"] is not None for n in self.m.nodes.values()))
    @rule(data=st.data(), status=st.sampled_from(["completed", "error", "completed", "cancelled"]))
    def retry(self, data, status):
        """The same node again beside a chain node (a retry of its step, a failed one when there is
        one), finished at once."""
        nodes = sorted(k for k, n in self.m.nodes.items() if n["pred"] is not None)
        failed = [k for k in nodes if self.m.nodes[k]["status"] in ("error", "cancelled")]
        target = data.draw(st.sampled_from(failed or nodes))
        t = self.m.nodes[target]
        c = self.s.append(Call(t["role"], t["name"], output=t["output"], predecessor=t["pred"], caller=t["caller"],
                               status=status))
        self.m.add(c.id, t["role"], t["caller"], t["pred"], status=status, name=t["name"], output=t["output"])

    @rule()
    def root_fork(self):
        c = self.s.append(Call("user", "root-fork", predecessor=ROOT))
        self.m.add(c.id, "user", ROOT, ROOT, name="root-fork")

    @precondition(lambda self: self.m.nodes)
    @rule(data=st.data(), named=st.booleans())
    def spawn(self, data, named):
        caller = data.draw(st.sampled_from(sorted(self.m.nodes)))
        name = f"sub-{len(self.m.nodes)}" if named else None
        rid = self.s.spawn_branch(caller, source="task", name=name, content="do it")
        self.m.add(rid, "user", caller, None, spawn=True, name="task")
        if name:
            self.m.names = {k: v for k, v in self.m.names.items() if v != name and k != rid}
            self.m.names[rid] = name

    @precondition(lambda self: self.m.nodes)
    @rule(data=st.data())
    def nested_running_tool(self, data):
        caller = data.draw(st.sampled_from(sorted(self.m.nodes)))
        c = self.s.append(Call("code", "tool", caller=caller, status="running"))
        self.m.add(c.id, "code", caller, None, status="running", name="tool")

    @rule()
    def chain_tool(self):
        pred = self.m.head
        c = self.s.append(Call("code", "tool", predecessor=pred, status="running",
                               caller=pred if pred != ROOT else ROOT))
        self.m.add(c.id, "code", pred, pred, status="running", name="tool")

    @precondition(lambda self: any(n["status"] == "running" for n in self.m.nodes.values()))
    @rule(data=st.data(), status=st.sampled_from(["completed", "error", "cancelled"]))
    def finish(self, data, status):
        nid = data.draw(st.sampled_from(sorted(k for k, n in self.m.nodes.items() if n["status"] == "running")))
        self.s.update(nid, output="done", status=status, metadata={"k": 1})
        n = self.m.nodes[nid]
        n["status"] = status
        if n["role"] == "code" and n["pred"] is not None and n["pred"] == self.m.head:
            self.m.head = nid

    @precondition(lambda self: self.m.nodes)
    @rule(data=st.data())
    def checkout(self, data):
        nid = data.draw(st.sampled_from(self.chain_nodes()))
        self.s.checkout(nid)
        self.m.head = nid

    @precondition(lambda self: self.m.nodes)
    @rule(data=st.data(), name=st.sampled_from(["a", "b", "c", None]))
    def name(self, data, name):
        nid = data.draw(st.sampled_from(self.chain_nodes()))
        self.s.name_branch(nid, name)
        self.m.names = {k: v for k, v in self.m.names.items() if v != name and k != nid}
        if name is not None:
            self.m.names[nid] = name

    @rule()
    def commit(self):
        self.s.commit_turn()

    @rule()
    def reopen(self):
        self.store.close()
        self.store = SessionStore(self.tmp)
        self.s = self.store.session("sm")

    # --- refusals --------------------------------------------------------------------------
    @rule(role=st.sampled_from(["user", "llm"]))
    def refuse_missing_predecessor(self, role):
        self.refused(lambda: self.s.append(Call(role, "orphan")), PredecessorMissingError)

    @rule()
    def refuse_unknown_edges(self):
        self.refused(lambda: self.s.append(Call("user", "x", predecessor="nope")), InvalidNodeError)
        self.refused(lambda: self.s.append(Call("code", "x", caller="nope")), InvalidNodeError)
        self.refused(lambda: self.s.checkout("nope"), NotFoundError)
        self.refused(lambda: self.s.spawn_branch("nope", source="task"), InvalidNodeError)

    @rule()
    def refuse_stale_head(self):
        self.refused(lambda: self.s.append(Call("user", "x", predecessor=self.m.head), expected_head="stale"),
                     HeadMismatchError)

    @precondition(lambda self: any(n["status"] != "running" for k, n in self.m.nodes.items()))
    @rule(data=st.data())
    def refuse_back_to_running(self, data):
        nid = data.draw(st.sampled_from(sorted(k for k, n in self.m.nodes.items() if n["status"] != "running")))
        self.refused(lambda: self.s.update(nid, status="running"), InvalidNodeError)

    @precondition(lambda self: any(not self.m.chain(k) for k in self.m.nodes))
    @rule(data=st.data())
    def refuse_non_chain_positions(self, data):
        nid = data.draw(st.sampled_from(sorted(k for k in self.m.nodes if not self.m.chain(k))))
        self.refused(lambda: self.s.checkout(nid), InvalidNodeError)
        self.refused(lambda: self.s.append(Call("llm", "x", predecessor=nid)), InvalidNodeError)

    # --- agreement -------------------------------------------------------------------------
    @invariant()
    def agrees_with_model(self):
        s, m = self.s, self.m
        assert s.head_id == m.head
        want_tips = m.tips()
        got = {b.head_id: b for b in s.list_branches()}
        assert set(got) == want_tips
        main = m.main_tip()
        for tip, b in got.items():
            assert b.main == (tip == main)
            assert b.current == (tip == m.head)
            assert b.name == m.names.get(tip)
            lane = m.nodes[tip]["lane"]
            assert b.spawn_root == (None if lane == "main" else lane)
            assert [c.id for c in s.get_branch(tip)] == m.branch(tip)
        assert [c.id for c in s.get_branch()] == (m.branch(m.head) if m.head != ROOT else [])
        assert {k: v for k, v in s.graph.branch_names.items()} == m.names
        want_usage = [0, 0]
        for c in s.graph.nodes.values():
            i, o = usage_of(c)
            want_usage[0] += i
            want_usage[1] += o
        assert s.graph.usage_total == want_usage
        seqs = [c.seq for c in s.graph.nodes.values()]
        assert len(set(seqs)) == len(seqs) and s.graph.last_seq == max(seqs) == m.seq


SessionMachine.TestCase.settings = settings(
    max_examples=200 if SLOW else 25, stateful_step_count=40 if SLOW else 25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow], derandomize=not SLOW)
TestSession = pytest.mark.slow(SessionMachine.TestCase)
