"""A top-level @agentic_function and a top-level `Runtime.exec` take the session's turn lock like
`run_turn` (issue 19 item 12): called from another process while a turn waits for its model reply,
they wait for the turn and then land after it, instead of forking it under its running llm node.

The turn runs here, against a real loopback OpenAI-compatible server that holds its first reply
until the test releases it; the other call runs in a child process on the same state dir. The test
releases the reply once the child has either finished (the defect) or is blocked in `flock` on the
session's turn.lock (read from /proc/locks)."""

import os
import subprocess
import sys
import threading

import pytest

from loopback_openai import LoopbackOpenAI
from waiting import wait_until
from sessiondag.core.model import ROOT
from sessiondag.runtime import Runtime, run_turn, session_context
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider
from sessiondag.store import SessionStore

pytestmark = pytest.mark.network   # loopback network (tests/tiers.py)

CHILD = """
import sys
from sessiondag.runtime import Runtime, agentic_function, session_context
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider
from sessiondag.store import SessionStore
state, wd, url, what = sys.argv[1:5]

@agentic_function
def tidy(n):
    return n + 1

rt = Runtime(provider=OpenAICompatProvider(base_url=url, api_key="k", model="m"), subagents=False)
with session_context("shared", working_dir=wd, store=SessionStore(state), runtime=rt):
    print(tidy(1) if what == "function" else rt.exec("TOP-LEVEL"), flush=True)
"""


class HeldOpenAI(LoopbackOpenAI):
    """Holds the reply to the first request (the turn's) until `release` is set."""

    def __init__(self, replies):
        super().__init__(replies)
        self.arrived, self.release = threading.Event(), threading.Event()

    def _post(self, h, body):
        if not self.arrived.is_set():
            self.arrived.set()
            self.release.wait(60)
        super()._post(h, body)


def blocked_on(pid: int, path: str) -> bool:
    """Is process `pid` waiting for a flock on `path` (a `->` line of /proc/locks)?"""
    ino = os.stat(path).st_ino
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            if "->" in parts and "FLOCK" in parts:
                i = parts.index("->")
                if int(parts[i + 4]) == pid and int(parts[i + 5].rsplit(":", 1)[1]) == ino:
                    return True
    return False


@pytest.mark.parametrize("what", ["function", "exec"])
def test_a_top_level_call_waits_for_the_running_turn(tmp_path, what):
    state, wd = str(tmp_path / "state"), tmp_path / "wd"
    wd.mkdir()
    replies = [{"match": "hello", "text": "turn answer"}, {"match": "TOP-LEVEL", "text": "exec answer"}]
    with HeldOpenAI(replies) as srv:
        store = SessionStore(state)
        rt = Runtime(provider=OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"), subagents=False)
        out: dict = {}

        def turn():
            with session_context("shared", working_dir=wd, store=store, runtime=rt):
                out["turn"] = run_turn("hello")
        t = threading.Thread(target=turn)
        t.start()
        try:
            assert srv.arrived.wait(30), "the turn never called the model"
            lock = store.session("shared").turn_lock_path
            child = subprocess.Popen([sys.executable, "-c", CHILD, state, str(wd), srv.base_url, what],
                                     stdout=subprocess.PIPE, text=True)
            wait_until(lambda: child.poll() is not None or blocked_on(child.pid, lock),
                       "the child to finish or wait for the turn lock")
        finally:
            srv.release.set()
            t.join(60)
        printed, _ = child.communicate(timeout=60)
        assert child.returncode == 0
        s = store.session("shared")
        s.refresh()
        g = s.graph
        res = out["turn"]
        top = [c for c in g.nodes.values() if c.caller == ROOT and c.name == ("tidy" if what == "function" else "m")
               and c.id not in res.node_ids]
        assert len(top) == 1, top
        assert top[0].predecessor == res.head_id  # after the turn, not under its llm node
        assert [b.head_id for b in s.list_branches()] == [top[0].id]  # one tip: nothing forked
        store.close()
