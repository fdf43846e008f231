"""The live document (report/live.py) patched change by change is the document built at once: a
session grows through the real CLI in other processes (turns with tool calls, ask_user, a sub-agent,
a cancelled turn, an error and its retry — a fork —, a compaction, a branch name) while a
LiveDocument on its own store follows it; after each step the patched rows, bodies, segments,
summaries, branches and usage equal a fresh build, and no step rebuilt the whole document."""

from __future__ import annotations

import json

import orjson
import pytest

from report_support import FAILING, RETRY, SCRIPT, cancel_a_turn, comparable, compact_first_turn, first_turn, fresh, sd
from sessiondag.report import Limits
from sessiondag.report.live import LiveDocument
from sessiondag.store import SessionStore


@pytest.fixture
def growing(tmp_path):
    home, wd, sid = first_turn(tmp_path)
    store = SessionStore(home)
    live = LiveDocument(store.session(sid), Limits())
    try:
        yield home, wd, sid, live, tmp_path
    finally:
        live.close()
        store.close()


def check(live, home, sid, resets_before):
    live.changed()
    assert live.settled(120)
    head, chunks = live.current()
    with live.cond:
        got = comparable(head, chunks)
    want = fresh(home, sid)
    for k in want:
        assert got[k] == want[k], k
    assert len(live.resets) == resets_before, f"a step rebuilt the whole document: {live.resets}"
    return len(live.patches.entries)


def test_patches_give_the_document_a_build_gives(growing):
    home, wd, sid, live, tmp = growing
    base = ["--state-dir", home, "--in-process", "--session", sid]
    script, failing, retry, answers = (tmp / n for n in ("s.json", "f.json", "r.json", "a.json"))
    script.write_text(json.dumps(SCRIPT))
    failing.write_text(json.dumps(FAILING))
    retry.write_text(json.dumps(RETRY))
    answers.write_text(json.dumps({"Which color?": "blue"}))
    n0 = len(live.patches.entries)
    sd(["run", *base, "--script", script, "--answers", answers, "--allow", "write,run", "build the thing"],
       home=home, cwd=wd)
    assert check(live, home, sid, 0) > n0          # tool calls, ask_user, spilled bodies, a sub-agent
    cancel_a_turn(home, wd, sid, tmp / "hang.json")
    check(live, home, sid, 0)
    assert sd(["run", *base, "--script", failing, "now fail"], home=home, cwd=wd, check=False).returncode == 1
    check(live, home, sid, 0)
    sd(["run", *base, "--script", retry, "--retry"], home=home, cwd=wd)     # a fork
    check(live, home, sid, 0)
    compact_first_turn(home, sid)
    check(live, home, sid, 0)
    branches = json.loads(sd(["sessions", "branches", "--state-dir", home, sid, "--json"], home=home, cwd=wd).stdout)
    head = next(b for b in branches if b["current"])
    sd(["sessions", "name", "--state-dir", home, sid, "--branch", head["head_id"], "retry-branch"], home=home, cwd=wd)
    check(live, home, sid, 0)
    assert "retry-branch" in [b["name"] for b in live.current()[0]["branches"]]


def test_a_page_behind_gets_every_patch_after_its_version_or_a_reset(growing):
    home, wd, sid, live, tmp = growing
    v0 = live.patches.version
    script = tmp / "s.json"
    script.write_text(json.dumps([{"text": "one"}]))
    sd(["run", "--state-dir", home, "--in-process", "--session", sid, "--script", script, "again"], home=home, cwd=wd)
    live.changed()
    assert live.settled(120)
    v, events = live.since(v0, 0)
    assert v == live.patches.version > v0 and events
    ids = [int(e.split(b"\n")[0].removeprefix(b"id: ")) for e in events]
    assert ids == list(range(v0 + 1, v + 1))                    # every one, in order, each with its id
    patches = [orjson.loads(e.split(b"\ndata: ")[1]) for e in events]
    assert any(r[1] for p in patches for r in p.get("rows", ()))
    assert live.since(v, 0) == (v, [])                          # nothing newer: nothing
    live.patches.entries.clear()                                # the patches a page needs are gone
    v2, events = live.since(v0, 0)
    assert v2 == live.patches.version and events == [b'id: %d\nevent: reset\ndata: {"why": "behind"}\n\n' % v2]


def test_text_streamed_for_a_call_that_already_ended_changes_nothing(growing):
    """The daemon sends a call's `text_delta`s before the update that ends it, but the bridge may read
    that update from disk (woken by an earlier change) before its subscription hands it the last
    deltas: those must not replace the recorded output (they did: the page kept the streamed text
    up to its last whitespace, the call's last word missing)."""
    home, wd, sid, live, tmp = growing
    head, chunks = live.current()
    llm = next(r for r, b in enumerate(chunks[0]) if b.get("text") == "hello")    # the model call's row
    node_id = chunks[0][llm]["id"]
    assert head["rows"]["status"][llm] != "r"
    n0 = len(live.patches.entries)
    live.text(node_id, "streamed late, ")
    live.text(node_id, "before the end ")
    check(live, home, sid, 0)
    assert live.current()[1][0][llm]["text"] == "hello"
    assert len(live.patches.entries) == n0, "a text patch was sent for a call that had ended"
