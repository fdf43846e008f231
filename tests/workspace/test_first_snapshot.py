"""The snapshot before a session's first turn runs beside the turn (runtime/baseline.py): the first
model request reaches a real loopback OpenAI-compatible server before that snapshot is recorded,
and still no tool touches the files before it is — the baseline holds the files as they were."""

import os
import subprocess
import sys
import threading

import pytest

from sessiondag.core.checkpoint import BASELINE_KEY, NODE_KEY
from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime import checkpoints as ck
from sessiondag.runtime.baseline import Baseline, Phase
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider
from sessiondag.store import checkpoints

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
from loopback_http import send_chunk, start_chunked  # noqa: E402
from loopback_openai import LoopbackOpenAI  # noqa: E402
from waiting import wait_until  # noqa: E402

pytestmark = [pytest.mark.network, pytest.mark.process]   # a loopback HTTP server; the turn's run_command


class HeldOpenAI(LoopbackOpenAI):
    """Holds its first request until `release`; `seen` is what the test checked meanwhile."""

    def __init__(self, replies, check):
        super().__init__(replies)
        self.check, self.seen = check, None
        self.release = threading.Event()

    def _post(self, h, body):
        if self.seen is None:
            self.seen = self.check()
            self.release.wait(60)
        super()._post(h, body)


class HeldMidStream(LoopbackOpenAI):
    """Answers its first request with the start of a stream, then holds it until `release` (the
    model is streaming when the turn is cancelled)."""

    def __init__(self, replies):
        super().__init__(replies)
        self.seen = None
        self.release = threading.Event()

    def _post(self, h, body):
        if self.seen is None:
            self.seen = True
            start_chunked(h)
            send_chunk(h, self._chunk({"role": "assistant", "content": "thinking"}), False)
            self.release.wait(60)
            return
        super()._post(h, body)


def files(s, ck_id):
    return {p.decode(): s.git.get_blob(e.sha) for p, e in checkpoints.read(s.git, ck_id)[0].items()}


def test_the_first_model_call_does_not_wait_for_the_first_snapshot(store, workdir):
    for i in range(200):
        (workdir / f"f{i:03d}.txt").write_text(f"file {i}\n")
    (workdir / "a.txt").write_text("old\n")
    sid = store.open_session("first", working_dir=workdir).id
    s = store.session(sid)
    replies = [{"match": "change a", "text": "", "tool_calls": [
        {"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}]},
        {"text": "done"}]

    def check():   # the first request is in: is the snapshot before the turn recorded yet?
        with s.lock:
            return BASELINE_KEY in s.graph.extra, (workdir / "a.txt").read_text()

    with HeldOpenAI(replies, check) as srv:
        rt = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"),
                     permissions=allow_policy({"write"}), subagents=False)
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_task("change a", session_id=sid, store=store,
                                                                  runtime=rt)))
        t.start()
        try:
            wait_until(lambda: srv.seen is not None or not t.is_alive(), "the server to record its first request")
        finally:
            srv.release.set()
            t.join(60)
    assert srv.seen == (False, "old\n")         # the model was asked before the baseline was recorded
    r = out["r"]
    base = s.graph.extra[BASELINE_KEY]
    assert files(s, base["id"])["a.txt"] == b"old\n" and len(files(s, base["id"])) == 201
    assert files(s, s.get_node(r.user_node_id).metadata[NODE_KEY]["id"])["a.txt"] == b"new\n"
    ck.restore(s, "ROOT")
    assert (workdir / "a.txt").read_text() == "old\n"


def test_a_first_turn_without_tools_keeps_both_snapshots(store, workdir):
    """The baseline's commit takes the turn's nodes with it (it is recorded after the model
    answered); the turn's commit still records its own snapshot on its user node."""
    (workdir / "a.txt").write_text("one\n")
    with LoopbackOpenAI([{"text": "nothing to do"}]) as srv:
        rt = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"), subagents=False)
        r = run_task("hello", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    meta = s.get_node(r.user_node_id).metadata[NODE_KEY]
    assert meta["id"] and meta["id"] == s.graph.extra[BASELINE_KEY]["id"]     # the same files, one tree
    assert s.git.workspace(s.git.head()) == meta["id"]
    assert not s.open_turn


def test_a_cancelled_first_turn_does_not_wait_for_its_baseline(store, workdir):
    """The baseline is held (another snapshot of the working dir holds the snapshotter); the first
    turn is cancelled while its model request is held: the cancel returns at once. The next turn
    adopts the baseline still under way and runs no tool before it is recorded; both turns end up
    with their own snapshot, and the baseline holds the files from before either turn."""
    for i in range(50):
        (workdir / f"f{i:02d}.txt").write_text(f"file {i}\n")
    (workdir / "a.txt").write_text("old\n")
    sid = store.open_session("cancelled", working_dir=workdir).id
    s = store.session(sid)
    snap = s.snapshots(s)
    replies = [{"match": "second", "text": "", "tool_calls": [
                   {"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}]},
               {"text": "done"}]

    def runtime():
        return Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"),
                       permissions=allow_policy({"write"}), subagents=False)

    snap._taking.acquire()   # a snapshot under way elsewhere (a diff's): the baseline waits behind it
    held = True
    with HeldMidStream(replies) as srv:
        try:
            rt, out = runtime(), {}
            t = threading.Thread(target=lambda: out.update(r=run_task("first", session_id=sid, store=store,
                                                                      runtime=rt)))
            t.start()
            wait_until(lambda: srv.seen is not None or not t.is_alive(), "the server to hold the first request")
            rt.cancel()
            t.join(60)
            assert not t.is_alive(), "the cancel waited for the first snapshot"
            first = out["r"]
            assert first.stop_reason == "cancelled"
            assert BASELINE_KEY not in s.graph.extra and not s.open_turn   # the nodes are committed
            b = Baseline.under_way(s)
            assert b is not None
            t2 = threading.Thread(target=lambda: out.update(r2=run_task("second", session_id=sid, store=store,
                                                                        runtime=runtime())))
            t2.start()
            wait_until(lambda: srv.requests or not t2.is_alive(), "the next turn to ask the model at once")
            assert (workdir / "a.txt").read_text() == "old\n"
            snap._taking.release()
            held = False
            t2.join(60)
            assert b.join(60)
        finally:
            if held:
                snap._taking.release()
            srv.release.set()
    second = out["r2"]
    assert second.stop_reason == "end_turn"
    base = s.graph.extra[BASELINE_KEY]
    assert files(s, base["id"])["a.txt"] == b"old\n" and len(files(s, base["id"])) == 51
    assert files(s, s.get_node(first.user_node_id).metadata[NODE_KEY]["id"])["a.txt"] == b"old\n"
    assert files(s, s.get_node(second.user_node_id).metadata[NODE_KEY]["id"])["a.txt"] == b"new\n"
    ck.restore(s, "ROOT")
    assert (workdir / "a.txt").read_text() == "old\n"
    assert Baseline.under_way(s) is None


def test_a_turn_cancelled_while_it_waits_for_its_baseline_returns_at_once(store, workdir):
    """The baseline is held (another snapshot of the working dir holds the snapshotter); the model
    asks for a tool, so the turn waits for the baseline before running it (Baseline.settle, the
    turn's runtime as the waiter). A cancel ends that wait at once: the turn ends cancelled, the tool
    never ran, the baseline is still under way; once released it is recorded, and so is the turn's
    own snapshot (it ended before a tool ran: it owes it)."""
    (workdir / "a.txt").write_text("old\n")
    sid = store.open_session("cancel-in-settle", working_dir=workdir).id
    s = store.session(sid)
    snap = s.snapshots(s)
    replies = [{"text": "", "tool_calls": [
        {"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "new\n"}}]}, {"text": "done"}]
    snap._taking.acquire()
    held = True
    with LoopbackOpenAI(replies) as srv:
        try:
            rt, out = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"),
                              permissions=allow_policy({"write"}), subagents=False), {}
            t = threading.Thread(target=lambda: out.update(r=run_task("first", session_id=sid, store=store,
                                                                      runtime=rt)))
            t.start()
            def waiting() -> Baseline | None:   # readiness: the turn waits for the baseline
                found = Baseline.under_way(s)
                return found if found is not None and found._waiters else None
            b = wait_until(lambda: waiting() or not t.is_alive(), "the turn to wait for the baseline")
            b = b if isinstance(b, Baseline) else Baseline.under_way(s)
            rt.cancel()
            t.join(60)
            assert not t.is_alive(), "the cancel did not end the wait for the baseline"
            assert out["r"].stop_reason == "cancelled"
            assert (workdir / "a.txt").read_text() == "old\n"              # the tool never ran
            assert BASELINE_KEY not in s.graph.extra and Baseline.under_way(s) is b
            snap._taking.release()
            held = False
            assert b is not None and b.join(60)
        finally:
            if held:
                snap._taking.release()
    assert files(s, s.graph.extra[BASELINE_KEY]["id"]) == {"a.txt": b"old\n"}
    assert files(s, s.get_node(out["r"].user_node_id).metadata[NODE_KEY]["id"]) == {"a.txt": b"old\n"}
    assert Baseline.under_way(s) is None


def _fresh_store(state_dir):
    from sessiondag.store import SessionStore
    from sessiondag.workspace.checkpointer import install
    st = SessionStore(state_dir)
    install(st)
    return st


def _fsck(s):
    subprocess.run(["git", "--git-dir", os.path.join(s.path, "git"), "fsck", "--strict"], check=True,
                   capture_output=True)


def test_closing_the_store_settles_a_cancelled_first_turns_snapshots(state_dir, workdir):
    """A library caller cancels a first turn, whose baseline is still held, and closes its store
    without waiting for anything: the close settles the baseline and the turn's own snapshot (it
    returns once they are recorded and no thread of them is left), so the reopened session has both
    and git accepts the repository."""
    (workdir / "a.txt").write_text("old\n")
    store = _fresh_store(state_dir)
    sid = store.open_session("abandoned", working_dir=workdir).id
    s = store.session(sid)
    snap = s.snapshots(s)
    snap._taking.acquire()     # the baseline waits behind another snapshot of the working dir
    held = True
    with HeldMidStream([{"text": "never read"}]) as srv:
        try:
            rt, out = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"),
                              subagents=False), {}
            t = threading.Thread(target=lambda: out.update(r=run_task("first", session_id=sid, store=store,
                                                                      runtime=rt)))
            t.start()
            wait_until(lambda: srv.seen is not None or not t.is_alive(), "the model request")
            rt.cancel()
            t.join(60)
            assert out["r"].stop_reason == "cancelled"
            b = Baseline.under_way(s)
            assert b is not None and s.baseline is b       # the session owns it
            closer = threading.Thread(target=store.close)
            closer.start()
            snap._taking.release()
            held = False
            closer.join(60)
            assert not closer.is_alive() and b.join(0)      # nothing of it outlives the store
            assert s.closed and s.baseline is None
        finally:
            if held:
                snap._taking.release()
            srv.release.set()
    again = _fresh_store(state_dir)
    try:
        s2 = again.session(sid)
        assert s2.damage is None
        assert [(c.role, c.status) for c in s2.get_branch()][-2:] == [("user", "completed"), ("llm", "cancelled")]
        assert files(s2, s2.graph.extra[BASELINE_KEY]["id"]) == {"a.txt": b"old\n"}
        assert files(s2, s2.get_node(out["r"].user_node_id).metadata[NODE_KEY]["id"]) == {"a.txt": b"old\n"}
        _fsck(s2)
    finally:
        again.close()


def test_closing_the_store_under_a_running_first_turn_stops_its_baseline(state_dir, workdir, caplog):
    """The store closes while a first turn waits for its model and its baseline is under way: the
    baseline stops at its next file, nothing is recorded, no journal is read again (it once logged
    "journal.log is damaged … ROOT appears twice"), the turn's late writes get SessionClosedError,
    and the reopened session is whole: its next turn takes the baseline."""
    from sessiondag.core.errors import SessionClosedError
    for i in range(20):
        (workdir / f"f{i:02d}.txt").write_text(f"file {i}\n")
    store = _fresh_store(state_dir)
    sid = store.open_session("closing", working_dir=workdir).id
    s = store.session(sid)
    snap = s.snapshots(s)
    snap._taking.acquire()
    held = True
    out = {}

    def turn():
        try:
            out["r"] = run_task("first", session_id=sid, store=store, runtime=rt)
        except Exception as e:  # noqa: BLE001 - what the late writer got
            out["e"] = e

    with HeldOpenAI([{"text": "too late"}], lambda: True) as srv:
        try:
            rt = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"), subagents=False)
            t = threading.Thread(target=turn)
            t.start()
            wait_until(lambda: srv.seen is not None or not t.is_alive(), "the model request to be held")
            b = s.baseline
            assert b is not None
            closer = threading.Thread(target=store.close)
            closer.start()
            wait_until(lambda: b._phase is not Phase.TAKING or not closer.is_alive(),
                       "the close to ask the snapshot to stop")
            assert b._phase is Phase.STOPPING  # the close gave the snapshot up before it read a file
            snap._taking.release()
            held = False
            closer.join(60)
            assert not closer.is_alive() and b.join(0) and s.closed
        finally:
            if held:
                snap._taking.release()
            srv.release.set()
        t.join(60)
    assert isinstance(out.get("e"), SessionClosedError), out
    assert not [r for r in caplog.records if "damaged" in r.getMessage()]
    again = _fresh_store(state_dir)
    try:
        s2 = again.session(sid)
        assert s2.damage is None and BASELINE_KEY not in s2.graph.extra
        assert [c.role for c in s2.get_branch()][-2:] == ["user", "llm"]   # acknowledged before the close: kept
        with LoopbackOpenAI([{"text": "fine"}]) as srv2:
            rt2 = Runtime(OpenAICompatProvider(base_url=srv2.base_url, api_key="k", model="m"), subagents=False)
            r = run_task("second", session_id=sid, store=again, runtime=rt2)
        assert r.stop_reason == "end_turn"
        base = files(s2, s2.graph.extra[BASELINE_KEY]["id"])
        assert len(base) == 20 and base["f03.txt"] == b"file 3\n"
        _fsck(s2)
    finally:
        again.close()
