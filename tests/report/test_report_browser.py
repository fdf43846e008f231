"""The HTML report in a real Chromium, opened from disk with the network off: the DAG picture, the
chat of each branch, tool calls, ask_user, permissions, sub-agents, the compaction, spilled bodies,
hostile text shown and never run, search, copy as markdown, themes. Screenshots go to artifacts."""

from __future__ import annotations

import json

import pytest

from report_support import BIG_MARK, FAKE_KEY, HOSTILE, UNICODE, sd


@pytest.fixture(scope="module")
def report(rich, tmp_path_factory):
    home, wd, sid = rich
    out = tmp_path_factory.mktemp("out") / "report.html"
    sd(["sessions", "export", "--state-dir", home, sid, "--format", "html", "-o", out], home=home, cwd=wd)
    return out


def open_report(page, path):
    page.offline()
    page.goto(path.as_uri())
    assert page.eval("document.body.dataset.ready") == "1", page.eval("document.body.innerText.slice(-2000)")
    assert page.console_errors == []
    assert page.requests == [path.as_uri()], "the report fetched something besides itself"


def pick_branch(page, label):
    """Choose the branch whose picker entry starts with `label`; for HEAD the entry that says HEAD, for
    main the main line's entry (it reads "main", or "<name> (main)" when the branch is named)."""
    page.eval(f"""(() => {{ const s = document.getElementById('branches'), l = {json.dumps(label)};
        s.value = [...s.options].find(o => o.textContent.startsWith(l) ||
                                           (l === 'HEAD' && o.textContent.includes('HEAD')) ||
                                           (l === 'main' && /^[^·]* \\(main\\) ·/.test(o.textContent))).value;
        s.dispatchEvent(new Event('change')); }})()""")


def texts(page, selector):
    return page.eval(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)")


def test_opens_offline_and_paints_the_graph_and_the_head_branch(page, report, artifacts):
    open_report(page, report)
    assert page.eval("document.title").startswith("build the thing")
    # the picture: user squares, model circles, the dashed spawn edge, a fork, the error node, HEAD and the name
    assert page.eval("document.querySelectorAll('#graph-svg .node').length") >= 15
    assert page.eval("document.querySelectorAll('#graph-svg path.edge.spawn').length") == 1
    assert page.eval("document.querySelectorAll('#graph-svg path.edge.fork').length") >= 1
    assert page.eval("document.querySelectorAll('#graph-svg .node.status-e').length") == 1
    assert page.eval("document.querySelectorAll('#graph-svg .node.status-x').length") == 1   # the cancelled call
    assert page.eval("document.querySelectorAll('#graph-svg path.xmark').length") == 1
    assert page.eval("document.querySelectorAll('#graph-svg .node.summary').length") == 1
    labels = " ".join(texts(page, "#graph-svg .branch-label"))
    assert "HEAD" in labels and "retry-branch" in labels and "counter" in labels
    # the chat of HEAD's branch: the retried turn, not the failed one
    chat = page.eval("document.getElementById('chat').innerText")
    assert "retried fine" in chat and "provider exploded" not in chat
    assert "retry-branch" in page.eval("document.getElementById('branch-head').innerText")
    page.screenshot(artifacts / "report-head.png")


def test_hostile_text_is_shown_never_run_and_keys_are_masked(page, report):
    open_report(page, report)
    assert page.eval("window.pwned") is None
    assert page.eval("document.querySelectorAll('script:not([type])').length") == 2   # the viewer's own two
    assert page.eval("document.querySelectorAll('#chat img, #chat script, #chat [onerror]').length") == 0
    pick_branch(page, "main")
    page.wait("document.getElementById('chat').innerText.includes('Printing something hostile')")
    page.eval("document.querySelectorAll('details.call').forEach(d => d.open = true)")
    outputs = " ".join(texts(page, "details.call pre"))
    assert HOSTILE in outputs
    assert UNICODE in page.eval("document.getElementById('chat').innerText")
    assert FAKE_KEY not in report.read_text() and "[redacted]" in outputs


def test_click_through_branches(page, report, artifacts):
    open_report(page, report)
    page.click("#graph-svg .node.status-e")
    page.wait("document.querySelector('#chat .turn.sel.status-e')")
    chat = page.eval("document.getElementById('chat').innerText")
    assert "provider exploded" in chat and "retried fine" not in chat
    assert page.eval("document.querySelector('#chat .turn.sel .error').textContent").startswith("ProviderError")
    page.screenshot(artifacts / "report-error-branch.png")
    # the sub-agent's branch, from its lane in the picture
    page.click("#graph-svg text[data-row] .branch-label")
    page.wait("document.getElementById('chat').innerText.includes('one two three')")
    assert "sub-agent" in page.eval("document.getElementById('branch-head').innerText")
    assert page.eval("document.querySelectorAll('#chat .turn').length") == 2   # its task and its answer
    # back to HEAD through the branch picker
    pick_branch(page, "HEAD")
    page.wait("document.getElementById('chat').innerText.includes('retried fine')")


def test_tool_calls_ask_user_permissions_files_and_subagent(page, report, artifacts):
    open_report(page, report)
    pick_branch(page, "main")
    page.wait("document.querySelector('details.call[data-call]')")
    page.eval("document.getElementById('chat').scrollTop = 0")
    page.wait("document.querySelector('#chat details.call')")
    write = "#chat details.call:has(.perm.granted)"
    page.click(write + " > summary")
    page.wait(f"document.querySelector({json.dumps(write)}).open")
    call = page.eval(f"document.querySelector({json.dumps(write)}).innerText")
    assert "hello.py" in call and "write: allowed" in call and "+print('hi')" in call
    page.screenshot(artifacts / "report-tool-call.png")
    ask = page.eval("document.querySelector('#chat .ask').innerText")
    assert "Which color?" in ask and "red · blue" in ask and "answer: blue" in ask
    # the refused command of the failed turn
    page.click("#graph-svg .node.status-e")
    page.wait("document.querySelector('#chat .perm.denied')")
    assert page.eval("document.querySelector('#chat .perm.denied').textContent") == "run: refused"
    # the sub-agent, nested in the spawn_agent call that started it
    pick_branch(page, "main")
    page.wait("document.querySelector('#chat details.subagent')")
    page.eval("const d = document.querySelector('#chat details.subagent'); d.closest('details.call').open = true;"
              "d.open = true")
    page.wait("document.querySelector('#chat details.subagent .turn')")
    assert "one two three" in page.eval("document.querySelector('#chat details.subagent').innerText")
    # the turn's files from its checkpoints
    page.eval("document.querySelectorAll('#chat > .turn > details.files').forEach(d => d.open = true)")
    files = page.eval("[...document.querySelectorAll('#chat > .turn > details.files')].map(d => d.innerText).join('\\n')")
    assert "Files changed in this turn (2, from checkpoint)" in files
    assert "added hello.py" in files and "added big.txt" in files and "+print('hi')" in files


def test_compaction_and_spilled_bodies(page, report):
    open_report(page, report)
    pick_branch(page, "main")
    page.wait("document.querySelector('#chat .summary-box')")
    box = page.eval("document.querySelector('#chat .summary-box').innerText")
    assert "Compaction summary" in box and "(3 nodes)" in box and "#2" in box
    page.eval("document.querySelector('#chat .summary-box').open = true")
    assert "build the thing" in page.eval("document.querySelector('#chat .summary-box .md').innerText")
    assert page.eval("document.querySelectorAll('#chat .turn.compacted').length") == 2   # its user + llm rows
    assert page.eval("document.querySelectorAll('#graph-svg rect.cover').length") == 1
    page.eval("document.querySelectorAll('details.call').forEach(d => d.open = true)")
    chat = page.eval("document.getElementById('chat').innerText")
    assert BIG_MARK in chat                  # a spilled input of 40 kB: within the limit, included whole
    assert "spilled body of 65586 bytes" in chat and "y" * 1000 in chat


def test_limit_summarizes_what_does_not_fit(page, rich, tmp_path):
    home, wd, sid = rich
    out = tmp_path / "small.html"
    sd(["sessions", "export", "--state-dir", home, sid, "--format", "html", "-o", out, "--max-body-kb", "16"],
       home=home, cwd=wd)
    assert BIG_MARK not in out.read_text()
    open_report(page, out)
    pick_branch(page, "main")
    page.wait("document.querySelector('#chat .cut')")
    notes = " ".join(texts(page, "#chat .cut"))
    assert "spilled body of 40" in notes and "beyond the report's limit are not included" in notes


def test_search_over_the_whole_session(page, report, artifacts):
    open_report(page, report)
    page.click("#search")
    page.type("one two three")
    page.key("Enter", 13)
    page.wait("!document.getElementById('results').hidden")
    head = page.eval("document.querySelector('#results .dim').textContent")
    assert head.startswith(("3 nodes", "4 nodes", "5 nodes")), head
    page.screenshot(artifacts / "report-search.png")
    row = page.eval("sdViewer.R.snip.indexOf('one two three')")    # the sub-agent's answer
    assert row >= 0
    page.click(f"#results .result[data-row='{row}']")
    page.wait("document.getElementById('results').hidden")
    page.wait(f"document.querySelector('#chat .turn.sel[data-row=\"{row}\"]')")
    assert "one two three" in page.eval("document.querySelector('#chat .turn.sel').innerText")
    assert "sub-agent counter" in page.eval("document.getElementById('branch-head').innerText")
    page.eval("document.getElementById('search').value = ''")
    page.click("#search")
    page.type("no such text anywhere")
    page.key("Enter", 13)
    page.wait("document.querySelector('#results .dim').textContent.startsWith('0 nodes')")


def test_copy_as_markdown_and_themes(page, report, artifacts):
    open_report(page, report)
    page.click("#chat .turn.sel .copy-md")
    page.wait("window.sdLastCopy")
    md = page.eval("window.sdLastCopy")
    assert md.startswith("## Assistant (#") and "retried fine" in md
    before = page.eval("document.documentElement.dataset.theme")
    page.click("#theme")
    after = page.eval("document.documentElement.dataset.theme")
    assert {before, after} == {"light", "dark"}
    bg = page.eval("getComputedStyle(document.body).backgroundColor")
    page.screenshot(artifacts / f"report-{after}.png")
    page.click("#theme")
    assert page.eval("getComputedStyle(document.body).backgroundColor") != bg
