"""Replay benchmark (runtime/replay.py): the overhead of `replay_call` over a direct provider call
with the same messages. The session is built with real turns (the scripted provider, offline, so
the model's own time is nil and what is left is sessiondag's): 50 turns with a tool call each.
Columns (ms, medians of interleaved runs; the machine is shared):
  direct     provider.complete(messages) with the messages the replay sends
  replay     replay_call: manifest check + render from the manifest + overrides + the llm node
             (append, update with usage/cost: two fdatasync'd journal writes) + branch name +
             HEAD put back + the turn's git commit
  overhead   replay - direct
  no commit  the same without the git commit of the turn (what the journal alone costs)

    python bench/replay_bench.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from sessiondag.runtime import Runtime, run_task
from sessiondag.runtime.context import SessionWriter
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.replay import Overrides, replay_call, request_for
from sessiondag.store import SessionStore

REPLY = {"text": "an answer of a few words", "repeat": True, "usage": {"input_tokens": 10, "output_tokens": 5}}


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    turns, runs = (10, 10) if quick else (50, 30)
    with tempfile.TemporaryDirectory() as d:
        store = SessionStore(d + "/state")
        script = [{"match": "list", "text": "", "repeat": True,
                   "tool_calls": [{"id": "t", "name": "list_dir", "arguments": {"path": "."}}]},
                  {"match": "file", "text": "done", "repeat": True}]
        rt = Runtime(ScriptedProvider(script))
        r = run_task("list the files", working_dir=d, store=store, runtime=rt)
        for k in range(turns - 1):
            run_task(f"list the files again {k}", session_id=r.session_id, store=store, runtime=rt)
        s = store.session(r.session_id)
        w = SessionWriter(store, s)
        target = [c for c in s.get_branch() if c.role == "llm"][-1].id
        prov = ScriptedProvider([REPLY])
        rrt = Runtime(prov)
        ov = Overrides(system="be brief")
        _, _, messages, tools = request_for(w, rrt, target, ov)
        direct, replay, bare = [], [], []
        commit = s.commit_turn
        for _ in range(runs):
            t = time.perf_counter()
            prov.complete(messages, tools, on_text=lambda x: None, cancelled=lambda: False)
            direct.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            replay_call(w, rrt, target, ov)
            replay.append((time.perf_counter() - t) * 1000)
            s.commit_turn = lambda message=None: None  # type: ignore[method-assign]
            t = time.perf_counter()
            replay_call(w, rrt, target, ov)
            bare.append((time.perf_counter() - t) * 1000)
            s.commit_turn = commit  # type: ignore[method-assign]
        dm, rm, bm = (statistics.median(x) for x in (direct, replay, bare))
        print(f"session: {len(s.graph.nodes)} nodes, {len(messages)} messages replayed")
        print(f"direct      {dm:8.3f} ms")
        print(f"replay      {rm:8.3f} ms")
        print(f"overhead    {rm - dm:8.3f} ms")
        print(f"no commit   {bm - dm:8.3f} ms (overhead without the git commit)")
        s.commit_turn()
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
