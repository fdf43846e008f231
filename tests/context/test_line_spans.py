"""Where a node's output lies in its stored line, as the node index records it (store/line_shape.py):
the recorded span is the searched one for any content, a span that does not fit the line is not
used, an index without spans (written before they existed) or with malformed ones still opens, and
a session reopened from indexed snapshots renders the reference renderer's bytes."""

from __future__ import annotations

import orjson
from hypothesis import given, settings, strategies as st

from sessiondag import ROOT, Call
from sessiondag.context.messages import render_bytes, render_messages
from sessiondag.store import SessionStore
from sessiondag.store import node_index
from sessiondag.store.line_shape import output_span, packed_span, spans

from .test_encoded import TEXT, TRICKY

INT = st.integers(-(2**63), 2**63 - 1)  # what a node can hold (orjson encodes 64-bit integers)
OUTPUT = st.one_of(TEXT, st.lists(TEXT, max_size=2), st.dictionaries(TEXT, TEXT, max_size=2), INT,
                   st.none())


def _line(role, name, output, input_, reads, md):
    c = Call(role, name, output=output, input=input_, reads=reads, metadata=md, id="n1", seq=3, created_at=1.5,
             caller=ROOT, predecessor=ROOT if role == "user" else None)
    return orjson.dumps(c.to_dict())


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["user", "llm", "code"]), TEXT, OUTPUT, st.one_of(st.none(), TEXT, INT),
       st.sampled_from([None, ["a"]]), st.dictionaries(TEXT, TEXT, max_size=2))
def test_the_recorded_span_is_the_searched_one(role, name, output, input_, reads, md):
    line = _line(role, name, output, input_, reads, md)
    s = spans(line)
    packed = packed_span(line)
    assert (packed == 0) == (s is None)
    want = None if s is None else (s[0], s[1])
    assert output_span(line, packed) == want == output_span(line, 0)
    if want is not None:
        assert orjson.loads(line[want[0]:want[1]]) == output


@given(TEXT, st.integers(-40, 40), st.integers(-40, 40))
def test_a_span_that_does_not_fit_the_line_is_searched_again(text, da, db):
    line = _line("user", "alice", text + '","status":"x', None, None, {"k": text})
    a, b = spans(line)[:2]
    shifted = max(0, a + da) << 32 | max(0, b + db)
    assert output_span(line, shifted) == (a, b)  # the keys around the output occur once: only (a, b) fits


def test_an_index_without_spans_or_with_malformed_ones_gives_rows_without():
    lines = [_line("user", "alice", t, None, None, {}) for t in TRICKY[:5]] + [_line("user", "a", [1], 1, None, {})]
    chunk, sha = b"\n".join(lines) + b"\n", b"0" * 40
    built = orjson.loads(node_index.build(chunk, sha))
    assert built["spans"] == [packed_span(x) for x in lines] and built["spans"][-1] == 0
    rows = node_index.rows_for(orjson.dumps(built), sha)
    assert rows is not None and rows.spans == built["spans"]
    for spans_value in ("absent", [1, 2], ["x"] * len(lines), [-1] * len(lines), {"a": 1}):
        d = {k: v for k, v in built.items() if k != "spans"}
        if spans_value != "absent":
            d["spans"] = spans_value
        rows = node_index.rows_for(orjson.dumps(d), sha)
        assert rows is not None and list(rows) == built["ids"] and rows.spans is None  # a column index


def test_a_reopened_session_renders_the_reference_bytes_from_recorded_spans(tmp_path):
    store = SessionStore(tmp_path / "state")
    sid = store.open_session(None, working_dir=None).id
    s = store.session(sid)
    for k, text in enumerate(TRICKY + ["plain words", "x" * 3000]):
        u = s.append(Call("user", "alice", output=text or "-", predecessor=s.head_id,
                          metadata={"memory_prefetch": "m"} if k == 3 else {}))
        s.append(Call("llm", "m", output=text, caller=u.id, predecessor=u.id,
                      status="error" if k == 5 else "completed", metadata={"spilled": []} if k == 6 else {}))
        if k % 4 == 0:
            s.commit_turn()
    s.commit_turn()
    store.close()
    for fmt in ("openai", "anthropic"):
        store = SessionStore(tmp_path / "state")
        s = store.session(sid)
        nodes = [c for c in s.graph.nodes.values() if c.id != ROOT]
        assert sum(1 for c in nodes if c.line_span) >= len(nodes) - 2  # opened with the index's spans
        got, _ = render_bytes(s, format=fmt)
        ref, _ = render_messages(s, format=fmt, fast=False)
        assert b"[" + b",".join(got) + b"]" == orjson.dumps(ref)
        store.close()


def test_messages_noted_by_the_memo_are_used_only_with_the_very_lines_noted(tmp_path):
    """stored.openai_messages with what scan_run noted: the noted messages when every node still
    has the line noted, and otherwise (a node decoded, or changed, since) that node's message from
    what it is now, as without notes."""
    from sessiondag.context import stored
    store = SessionStore(tmp_path / "state")
    store.start_session("n", working_dir=str(tmp_path))
    s = store.session("n")
    for i in range(12):
        s.append(Call("user" if i % 2 == 0 else "llm", "m", output=f"text {i}", predecessor=s.head_id))
    s.commit_turn()
    store.close()
    store = SessionStore(tmp_path / "state")
    nodes = [c for c in store.session("n").get_branch() if c.id != ROOT]
    noted = stored.Noted(0)
    stored.scan_run(nodes, noted)
    plain = stored.openai_messages(nodes)
    assert None not in plain and stored.openai_messages(nodes, noted.window(0, len(nodes))) == plain
    nodes[3].output  # decoded: it has no stored line now, so no message from one
    nodes[5].touch()
    nodes[5].output = "changed"
    got = stored.openai_messages(nodes, noted.window(0, len(nodes)))
    assert got == stored.openai_messages(nodes) and got[3] is None and got[5] is None
    assert got[:3] == plain[:3] and got[6:] == plain[6:]
    store.close()
