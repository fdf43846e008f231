"""SessiondagSaver's write path: the session a thread writes to is remembered (no look-up on disk
per put), and one dropped under the saver starts again at the next write."""

from __future__ import annotations

import subprocess

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from sessiondag.integrations.langgraph import SessiondagSaver
from sessiondag.integrations.langgraph.values import INLINE_MAX
from sessiondag.store import SessionStore


def put(saver, thread, parent, messages, step, version):
    cp = empty_checkpoint()
    cp.update(id=str(uuid6(clock_seq=step)), channel_values={"messages": messages},
              channel_versions={"messages": version})
    conf = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent:
        conf["configurable"]["checkpoint_id"] = parent
    return saver.put(conf, cp, {"source": "loop", "step": step, "parents": {}},
                     {"messages": version})["configurable"]["checkpoint_id"]


def latest(saver, thread):
    got = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    return None if got is None else got.checkpoint["channel_values"]["messages"]


@pytest.mark.parametrize("size", ["inline", "blob"])
@pytest.mark.parametrize("how", ["reset by its store", "removed by another process"])
def test_a_thread_dropped_under_the_saver_starts_again_at_the_next_put(tmp_path, how, size):
    store = SessionStore(tmp_path / "state")
    saver = SessiondagSaver(store, commit_every=0)
    body = "x" * (10 if size == "inline" else 2 * INLINE_MAX)
    v1 = saver.get_next_version(None, None)
    first = put(saver, "t", None, [body + "1"], 1, v1)
    s = saver.session_for("t")
    assert s is not None and latest(saver, "t") == [body + "1"]
    if how == "reset by its store":
        assert store.reset_session(s.id)
    else:  # `rm -rf` of the session directory, as a user (or another tool) would
        subprocess.run(["rm", "-rf", s.path], check=True)
    assert latest(saver, "t") is None
    v2 = saver.get_next_version(v1, None)
    put(saver, "t", first, [body + "1", body + "2"], 2, v2)  # its parent is gone with the session
    assert latest(saver, "t") == [body + "1", body + "2"]
    saver.close()
    reopened = SessiondagSaver(SessionStore(tmp_path / "state"))  # on disk, not only in this process
    assert latest(reopened, "t") == [body + "1", body + "2"]
    assert len([c for c in reopened.session_for("t").get_branch() if c.name == "checkpoint"]) == 1
    reopened.close()
    store.close()

