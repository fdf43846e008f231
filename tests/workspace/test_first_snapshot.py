"""The snapshot before a session's first turn runs beside the turn (runtime/baseline.py): the first
model request reaches a real loopback OpenAI-compatible server before that snapshot is recorded,
and still no tool touches the files before it is — the baseline holds the files as they were."""

import os
import sys
import threading

from sessiondag.core.checkpoint import BASELINE_KEY, NODE_KEY
from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime import checkpoints as ck
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider
from sessiondag.store import checkpoints

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
from loopback_openai import LoopbackOpenAI  # noqa: E402


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
            while srv.seen is None and t.is_alive():
                threading.Event().wait(0.01)   # readiness: the server records its first request
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
