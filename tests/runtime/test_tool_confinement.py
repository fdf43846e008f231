"""Issue 19, items 1-4 at the tools: a swapped tree, hard links, FIFOs and names that are not UTF-8.
The swap campaign runs with both resolvers of workspace/beneath.py (SESSIONDAG_BENEATH)."""

import base64
import os
import threading

import pytest

from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime.errors import PathRefusedError
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.tools import ToolContext, edit_file, list_dir, read_file, search_text, write_file
from tests.reliability.campaign_escape import campaign


def ctx(wd, allow=("write",), **kw):
    return ToolContext(str(wd), Runtime(ScriptedProvider(), permissions=allow_policy(set(allow)), **kw))


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_swapping_sub_for_a_symlink_never_leads_the_tools_out(tmp_path, monkeypatch, resolver):
    monkeypatch.setenv("SESSIONDAG_BENEATH", resolver)
    r = campaign(str(tmp_path), lambda wd, rel: read_file(ctx(wd), rel),
                 lambda wd, rel: write_file(ctx(wd), rel, "pwned"), 300)
    assert r["escapes"] == 0 and r["hangs"] == 0, r
    assert r["ok"] > 0 and r["refused"] > 0, r


def test_hard_links_are_refused_for_writes_and_for_reads_unless_allowed(tmp_path):
    wd, out = tmp_path / "wd", tmp_path / "out"
    wd.mkdir()
    out.mkdir()
    (out / "passwd").write_text("root:x:0:0\n")
    os.link(out / "passwd", wd / "innocent.txt")
    for op in (lambda: write_file(ctx(wd), "innocent.txt", "pwned"),
               lambda: edit_file(ctx(wd), "innocent.txt", "root", "toor"),
               lambda: read_file(ctx(wd), "innocent.txt")):
        with pytest.raises(PathRefusedError) as e:
            op()
        assert e.value.reason == "hard_link"
    assert "root:x" not in search_text(ctx(wd), "root")
    assert read_file(ctx(wd, read_hard_links=True), "innocent.txt") == "root:x:0:0\n"
    with pytest.raises(PathRefusedError):
        write_file(ctx(wd, read_hard_links=True), "innocent.txt", "pwned")
    assert (out / "passwd").read_text() == "root:x:0:0\n"


def _returns(fn):
    done = {}

    def go():
        try:
            done["v"] = fn()
        except Exception as e:  # noqa: BLE001
            done["e"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the tool blocked"
    return done


def test_fifos_are_refused_and_skipped_without_blocking(tmp_path):
    wd = tmp_path / "wd"
    (wd / "d").mkdir(parents=True)
    os.mkfifo(wd / "d" / "pipe")
    (wd / "d" / "note.txt").write_text("needle here\n")
    r = _returns(lambda: read_file(ctx(wd), "d/pipe"))
    assert isinstance(r.get("e"), PathRefusedError) and r["e"].reason == "not_regular"
    r = _returns(lambda: search_text(ctx(wd), "needle"))
    assert r["v"] == "d/note.txt:1: needle here"
    r = _returns(lambda: write_file(ctx(wd), "d/pipe", "x"))
    assert isinstance(r.get("e"), PathRefusedError) and r["e"].reason == "not_regular"


def test_names_that_are_not_utf8_are_shown_losslessly(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    raw = os.fsencode(wd) + b"/bad\xff.txt"
    with open(raw, "wb") as f:
        f.write(b"needle\n")
    listing = list_dir(ctx(wd))
    assert listing == "bad\\xff.txt"
    listing.encode("utf-8")
    assert base64.b64decode(listing.metadata["raw_names"]["bad\\xff.txt"]) == b"bad\xff.txt"
    hits = search_text(ctx(wd), "needle")
    assert hits == "bad\\xff.txt:1: needle" and hits.metadata["raw_names"]
    assert read_file(ctx(wd), "bad\\xff.txt") == "needle\n"     # the shown name is accepted back


def test_a_listing_of_names_that_are_not_utf8_completes_and_commits(store, tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    with open(os.fsencode(wd) + b"/bad\xff.txt", "wb"):
        pass
    script = [{"text": "", "tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "listed"}]
    r = run_task("list", working_dir=wd, store=store, runtime=Runtime(ScriptedProvider(script)))
    s = store.session(r.session_id)
    assert r.stop_reason == "end_turn", r
    tool = [c for c in s.get_branch() if c.name == "list_dir"][0]
    assert tool.status == "completed" and tool.output == "bad\\xff.txt"
    assert not s.open_turn
