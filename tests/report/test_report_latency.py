"""Tool-call latency: the runtime records each code node's wall time (`sessiondag.latency_ms`, as a
model call does) whatever its outcome — a tool call that completes, one that fails, an agentic
function — and the report shows it on the call, in Chromium, and in "copy as markdown"."""

from __future__ import annotations

import json
import time

import pytest

from report_support import sd
from sessiondag.core.usage import LATENCY_KEY
from sessiondag.runtime import agentic_function, session_context
from sessiondag.store import SessionStore

SLEEP_S = 0.3


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    """A CLI turn with a tool call that sleeps, a failing (unknown) tool call and a quick one."""
    tmp = tmp_path_factory.mktemp("latency")
    home, wd = tmp / "state", tmp / "work"
    home.mkdir()
    wd.mkdir()
    script = tmp / "s.json"
    script.write_text(json.dumps([
        {"text": "Waiting a bit.", "tool_calls": [{"name": "run_command", "arguments": {"command": f"sleep {SLEEP_S}"}},
                                                  {"name": "no_such_tool", "arguments": {}}]},
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]},
        {"text": "done"}]))
    out = sd(["run", "--state-dir", home, "--in-process", "--provider", "scripted", "--script", script,
              "--allow", "run", "--json", "time the tools"], home=home, cwd=wd)
    return home, wd, json.loads(out.stdout)["session_id"]


def tool_nodes(home, sid):
    store = SessionStore(home)
    try:
        s = store.session(sid)
        return {c.name: c for c in s.graph.nodes.values() if c.role == "code" and "tool_call_id" in c.metadata}
    finally:
        store.close()


def test_every_tool_call_records_its_wall_time(timed):
    home, _, sid = timed
    calls = tool_nodes(home, sid)
    assert set(calls) == {"run_command", "no_such_tool", "read_file"}
    assert calls["run_command"].status == "completed" and calls["no_such_tool"].status == "error"
    for c in calls.values():
        assert isinstance(c.metadata[LATENCY_KEY], float) and c.metadata[LATENCY_KEY] >= 0, c.name
    # the recorded time covers the tool's own run (a lower bound, not a speed claim)
    assert calls["run_command"].metadata[LATENCY_KEY] >= SLEEP_S * 1000
    assert calls["run_command"].metadata[LATENCY_KEY] > calls["no_such_tool"].metadata[LATENCY_KEY]


@agentic_function
def slow_step(n: int) -> int:
    time.sleep(SLEEP_S)
    return n + 1


@agentic_function
def broken_step() -> None:
    raise ValueError("no")


def test_an_agentic_function_records_its_wall_time_too(tmp_path):
    store = SessionStore(tmp_path / "state")
    try:
        with session_context(working_dir=str(tmp_path), store=store, create_runtime_if_none=False) as h:
            assert slow_step(1) == 2
            with pytest.raises(ValueError):
                broken_step()
        nodes = {c.name: c for c in h.session.graph.nodes.values() if c.role == "code"}
        assert nodes["slow_step"].metadata[LATENCY_KEY] >= SLEEP_S * 1000
        assert nodes["broken_step"].status == "error" and nodes["broken_step"].metadata[LATENCY_KEY] >= 0
    finally:
        store.close()


def test_the_report_shows_each_calls_latency(timed, page, tmp_path, artifacts):
    home, wd, sid = timed
    out = tmp_path / "r.html"
    sd(["sessions", "export", "--state-dir", home, sid, "--format", "html", "-o", out], home=home, cwd=wd)
    recorded = {n: c.metadata[LATENCY_KEY] for n, c in tool_nodes(home, sid).items()}
    page.offline()
    page.goto(out.as_uri())
    assert page.eval("document.body.dataset.ready") == "1"
    shown = page.eval("""Object.fromEntries([...document.querySelectorAll('#chat details.call')].map(d =>
        [d.querySelector('.name').textContent.slice(2), d.querySelector('summary .latency')?.textContent]))""")
    assert set(shown) == set(recorded)
    secs = float(shown["run_command"].removesuffix(" s")) if shown["run_command"].endswith(" s") else \
        float(shown["run_command"].removesuffix(" ms")) / 1000
    assert abs(secs - recorded["run_command"] / 1000) < 0.01
    for name, text in shown.items():
        assert text and text.endswith(("ms", " s")), (name, text)
    page.click("#chat .turn.role-l .copy-md")
    page.wait("window.sdLastCopy")
    assert "ms)" in page.eval("window.sdLastCopy") or " s)" in page.eval("window.sdLastCopy")
    page.screenshot(artifacts / "report-tool-latency.png")
    assert page.console_errors == []
