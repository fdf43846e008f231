"""A big session's report in Chromium: the graph is drawn for the rows in view only, the newest turns
of HEAD's branch paint from the first chunks, and older turns and far rows load on scroll."""

from __future__ import annotations

import pytest

from report_support import sd, synthetic_session


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    home = d / "state"
    home.mkdir()
    sid = synthetic_session(home, 2500)              # 10,000 nodes, a fork every 25 turns
    out = d / "big.html"
    sd(["sessions", "export", "--state-dir", home, sid, "--format", "html", "-o", out], home=home, cwd=d)
    return out


def test_big_report_paints_newest_and_loads_the_rest_on_scroll(page, big, artifacts):
    page.offline()
    page.goto(big.as_uri())
    assert page.console_errors == [] and page.requests == [big.as_uri()]
    rows = page.eval("sdViewer.n")
    assert rows == 7500                               # user + 2 model calls per turn; tool calls fold in
    assert page.eval("document.querySelectorAll('#graph-svg .node').length") < 200
    assert page.eval("sdViewer.chunks.size") <= 2     # only the chunks the first screen needed
    first = page.eval("document.querySelectorAll('#chat .turn').length")
    assert 0 < first <= 50
    assert "Done with step 2499" in page.eval("document.getElementById('chat').innerText")
    page.screenshot(artifacts / "report-big.png")
    # older turns on scrolling the chat up
    page.eval("document.getElementById('chat').scrollTop = 0")
    page.wait(f"document.querySelectorAll('#chat .turn').length > {first}")
    # the start of the session on scrolling the graph to the top
    page.eval("document.getElementById('graph').scrollTop = 0")
    page.wait("document.querySelector('#graph-svg .node[data-row=\"0\"]')")
    page.click("#graph-svg .node[data-row='0']")
    page.wait("document.querySelector('#chat .turn.sel[data-row=\"0\"]')")
    assert "turn 0:" in page.eval("document.querySelector('#chat .turn.sel').innerText")
    assert page.eval("sdViewer.chunks.size") < page.eval("sdViewer.d.chunk_count")
