"""The encoded renders encode to exactly the bytes of the plain render the runtime sends a model:
`encoded=True` (texts sliced from the nodes' stored lines as orjson.Fragment pieces) and
`render_bytes` (what session/render sends: each message already encoded, plain text messages
spliced from the stored lines, kept encoded in the prefix memo)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag import Call, ROOT
from sessiondag.context import render as render_mod, stored
from sessiondag.context.aging import advance_aging
from sessiondag.context.attachments import attach
from sessiondag.context.compaction import compact
from sessiondag.context.messages import render_bytes, render_messages, replay_messages
from sessiondag.context.render import render_context
from sessiondag.context.system_prompt import record_system_prompt
from sessiondag.core.errors import InvalidNodeError
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import DaemonProc  # noqa: E402

FORMATS = ("openai", "anthropic")
AGING = {"SESSIONDAG_TOOL_AGING_TAIL_TURNS": "1", "SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS": "3"}
# strings that could fool a scanner of the stored line: quotes, backslash runs, the line's own keys
TRICKY = ['"', '\\', '\\"', '\\\\"', 'a\\\\', '","status":"x', ',"input":null,"output":"', '{', '[', '}',
          ',"reads":[],"metadata":{', '"memory_prefetch"', '"spilled"', "é ☃ 𝄞", "\x00\x1f\n\t", "\u2028", ""]
TEXT = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12),
                 st.lists(st.sampled_from(TRICKY + ["x", "y"]), max_size=5).map("".join))
OPS = st.lists(st.tuples(st.sampled_from(["user", "user", "llm", "llm", "tool", "func", "inner", "attach",
                                          "shape", "prompt", "checkout", "compact", "commit", "spawn"]),
                         TEXT, st.integers(0, 10_000)), min_size=4, max_size=30)


def _chain(s):
    return [c for c in s.get_branch() if not c.name.startswith("context/")]


def _apply(s, op, text, k):
    head = s.head_id
    chain = _chain(s)
    users = [c for c in chain if c.role == "user" and c.caller == ROOT]
    llms = [c for c in chain if c.role == "llm" and c.name != "context/summary"]
    if op == "user":
        md = [{}, {"memory_prefetch": text or "m"}, {"note": "spilled", "x": {"memory_prefetch": 1}},
              {"tag": text}][k % 4]
        s.append(Call("user", ["alice", "fn{x}", "a\"b"][k % 3], output=text, predecessor=head, metadata=md))
    elif op == "llm" and users:
        status = ["completed", "completed", "error", "cancelled", "running"][k % 5]
        md = {"error": {"type": "E", "message": text}} if status == "error" and k % 2 else {"usage": k}
        s.append(Call("llm", "m", output=text if k % 7 else {"content": text}, caller=users[-1].id,
                      predecessor=head, status=status, metadata=md))
    elif op == "tool" and llms:
        s.append(Call("code", "grep", input={"q": text}, output=text, caller=llms[-1].id,
                      predecessor=head if k % 2 else None, status=["completed", "error"][k % 2],
                      metadata={"tool_call_id": f"c{k % 4}"}))
    elif op == "func" and chain:
        s.append(Call("code", "fn", input=text, output=text, caller=chain[k % len(chain)].id,
                      metadata={"expose": ["io", "full"][k % 2]}))
    elif op == "inner":
        codes = [c for c in s.graph.nodes.values() if c.role == "code" and c.id != ROOT]
        if codes:
            s.append(Call("llm", "m", input=text or None, output=text, caller=codes[k % len(codes)].id))
    elif op == "attach":
        part = attach(s, (text or "x").encode(), media_type=["text/plain", "image/png"][k % 2], name="f.txt")
        s.append(Call("user", "alice", output=[text, part], predecessor=head))
    elif op == "shape":  # other stored shapes: reads, a list or dict output, a spilled output, an input
        out = [text * 400, [text, {"type": "text", "text": text}], {"text": text}, text][k % 4]
        s.append(Call("user", "alice", output=out, input=None if k % 3 else {"i": text}, predecessor=head,
                      reads=[chain[0].id] if chain and k % 5 == 0 else None))
    elif op == "prompt":
        record_system_prompt(s, text or "be brief")
    elif op == "checkout" and chain:
        s.checkout(chain[k % len(chain)].id)
    elif op == "compact" and len(chain) >= 3:
        i = k % (len(chain) - 2)
        try:
            compact(s, [c.id for c in chain[i:i + 2]], f"summary {text}")
        except InvalidNodeError:
            pass
    elif op == "commit":
        s.commit_turn()
    elif op == "spawn" and llms:  # a sub-agent: a spawn branch off a reply, and its own turn
        root = s.spawn_branch(llms[k % len(llms)].id, source="task", content=text or "do it")
        s.append(Call("llm", "sub", output=text, caller=root, predecessor=root))
        s.checkout(root if k % 3 else s.head_id)


def build_session(d, ops, pick):
    """A session in state dir `d` from the ops, committed, plus one node in the journal only:
    (its id, {head: [a code node rendered there, to render in-frame]})."""
    store = SessionStore(d, commit_hooks=(advance_aging,))
    sid = store.open_session(None, working_dir=None).id
    s = store.session(sid)
    for op, text, k in ops:
        _apply(s, op, text, k)
    s.commit_turn()
    s.append(Call("user", "alice", output="after the commit", predecessor=s.head_id))  # journal only
    frames = {}
    for b in [x.head_id for x in s.list_branches()] + [s.head_id]:
        codes = [c.id for c in render_context(s, b).nodes if c.role == "code"]
        if codes:
            frames[b] = [codes[pick % len(codes)]]
    store.close()
    return sid, frames


def _render(s, mode, h, f, fr=None):
    """(the messages' JSON, the manifest) as `mode` renders them: plain, encoded or bytes."""
    if mode == "bytes":
        items, m = render_bytes(s, h, frame=fr, format=f)
        return b"[" + b",".join(items) + b"]", m
    msgs, m = render_messages(s, h, frame=fr, format=f, encoded=mode == "encoded")
    return orjson.dumps(msgs), m


def _renders(state, sid, mode, frames, memo=True):
    """Every head's render in both formats (and in-frame), on a freshly opened store; for the
    current head also warm (again, and after one more node) and with the prefix memo off."""
    store = SessionStore(state, commit_hooks=(advance_aging,))
    render_mod.USE_PREFIX_MEMO = memo
    try:
        s = store.session(sid)
        heads = [b.head_id for b in s.list_branches()] + [s.head_id]
        out = {}
        for h in heads:
            for f in FORMATS:
                out[h, f] = _render(s, mode, h, f)
                for fr in frames.get(h, ()):
                    out[h, f, fr] = _render(s, mode, h, f, fr)
        s.checkout(heads[-1])
        for f in FORMATS:
            out["again", f] = _render(s, mode, None, f)
        said = [c for c in s.get_branch() if c.role in ("user", "llm")]
        if said:  # a node changed after the render: decoded now, its cached pieces dropped
            s.update(said[len(said) // 2].id, output="changed ☃", metadata={"spilled": ["none"]})
        s.append(Call("user", "alice", output="one more ☃ \"", predecessor=s.head_id,
                      id="one-more"))
        for f in FORMATS:
            out["more", f] = _render(s, mode, None, f)
        return out
    finally:
        render_mod.USE_PREFIX_MEMO = True
        store.close()


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("SESSIONDAG_PROPERTY_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.integers(0, 1000))
def test_encoded_render_is_the_plain_render_byte_for_byte(ops, pick):
    """On random reopened sessions (tool calls, functions, inner calls, sub-agents, attachments,
    memory, statuses, spilled bodies, compaction, aging, non-ASCII and escape-heavy text): every
    encoded render is the plain one, byte for byte, manifests included — cold, warm, one node
    later, in frames, with the prefix memo on and off."""
    env = {"SESSIONDAG_NODE_SPILL": "1000", **AGING}
    with mock.patch.dict(os.environ, env):  # restored afterwards (no fixture: hypothesis runs many examples)
        with tempfile.TemporaryDirectory() as d:
            sid, frames = build_session(d, ops, pick)
            state = os.path.join(d, "state")
            shutil.copytree(d, state, ignore=shutil.ignore_patterns("state"))
            plain = _renders(state, sid, "plain", frames, memo=False)
            for mode, memo in (("plain", True), ("encoded", True), ("bytes", True), ("bytes", False)):
                shutil.rmtree(state)
                shutil.copytree(d, state, ignore=shutil.ignore_patterns("state"))
                assert _renders(state, sid, mode, frames, memo) == plain, (mode, memo)


@pytest.mark.parametrize("text", TRICKY + ["plain words", "x" * 5000])
def test_text_body_slices_exactly_the_encoded_output(tmp_path, text):
    store = SessionStore(tmp_path / "state")
    sid = store.open_session(None, working_dir=None).id
    s = store.session(sid)
    u = s.append(Call("user", "alice", output=text, predecessor=ROOT, metadata={"k": text}))
    # quotes, backslashes, the line's own keys in a name before the output: still the common shape
    named = [s.append(Call("user", name, output=text, predecessor=u.id))
             for name in ('a"b\\', ',"input":null,"output":"x"', "a[")]
    braced = s.append(Call("user", "a{", output=text, predecessor=u.id))  # a "{" before: not risked
    odd = [s.append(Call("user", "alice", input=1, output=text, predecessor=u.id)),
           s.append(Call("user", "alice", output=[text], predecessor=u.id)),
           s.append(Call("user", "alice", output=text, predecessor=u.id, reads=[u.id]))]
    assert stored.text_body(u) is None  # decoded (appended here): nothing to slice
    s.commit_turn()
    store.close()
    store = SessionStore(tmp_path / "state")
    s = store.session(sid)
    u2 = s.graph.nodes[u.id]
    body = stored.text_body(u2)
    assert body is not None and body[0] == orjson.dumps(text) and orjson.loads(body[1]) == {"k": text}
    assert u2.stored_line() is not None  # slicing decoded nothing
    for c in named:
        assert stored.text_body(s.graph.nodes[c.id])[0] == orjson.dumps(text)
    assert stored.text_body(s.graph.nodes[braced.id]) is None
    for c in odd:
        assert stored.text_body(s.graph.nodes[c.id]) is None
    assert not stored.meta_has(u2, "spilled") and u2.stored_line() is not None
    store.close()


@pytest.mark.anyio
@pytest.mark.process
async def test_session_render_over_rpc_sends_what_the_model_gets(tmp_path):
    """A reopened session rendered by a real daemon: the reply's messages are the runtime's, the
    bodies stayed undecoded, and a replay of the recorded manifest matches byte for byte."""
    state, sid = tmp_path / "state", "rpc-render"
    store = SessionStore(state)
    store.start_session(sid, working_dir=str(tmp_path))
    s = store.session(sid)
    record_system_prompt(s, "you are \"helpful\"")
    for i in range(30):
        u = s.append(Call("user", "alice", output=f"question {i} \\\" {TRICKY[i % len(TRICKY)]}",
                          predecessor=s.head_id))
        s.append(Call("llm", "m", output=f"answer {i} ☃", caller=u.id, predecessor=u.id, metadata={"usage": i}))
    msgs, manifest = render_messages(s, format="anthropic")
    call = s.append(Call("llm", "m", output="ok", caller=u.id, predecessor=s.head_id,
                         metadata={"render_manifest": manifest}))
    s.commit_turn()
    store.close()

    store = SessionStore(state)
    s = store.session(sid)
    items, _ = render_bytes(s, format="openai")
    assert all(c.stored_line() is not None for c in s.get_branch()[:-1] if c.role in ("user", "llm"))
    encoded, _ = render_messages(s, format="openai", encoded=True)
    assert sum(type(m["content"]) is orjson.Fragment for m in encoded) >= 60  # the fast path ran
    assert all(c.stored_line() is not None for c in s.get_branch()[:-1] if c.role in ("user", "llm"))
    assert orjson.dumps(replay_messages(s, call.id, format="anthropic")) == orjson.dumps(msgs)
    want = {f: render_messages(s, format=f)[0] for f in FORMATS}
    assert b"[" + b",".join(items) + b"]" == orjson.dumps(want["openai"])
    store.close()

    d = DaemonProc(["--socket", "--state-dir", str(state)])
    try:
        c = await connect_unix(d.socket)
        await c.open(session_id=sid, working_dir=str(tmp_path))
        for f in FORMATS:
            r = await c.call("session/render", {"session_id": sid, "format": f})
            assert r["messages"] == want[f]
        await c.aclose()
    finally:
        d.stop()


@pytest.mark.parametrize("called", [False, True], ids=["top-level", "called-by-user"])
def test_a_cold_render_slices_the_chunks_where_they_lie(tmp_path, called):
    """A render of a reopened chat whose bodies are still in storage reads each chunk once and
    slices its lines where they lie in it (DeferredChunk.view): no node is given a line of its own,
    the bytes are the reference renderer's, and a body read after it, a change, and the next render
    see the same values as ever. Both shapes of a chat: replies at the top level (store_bench's),
    and each reply called by its user node (the runtime's, runtime/loop.py) — a user node whose
    callees are all chain nodes of their own renders alone, as one that calls none; one that also
    ran a function (turns past 80) renders with it, through its subtree."""
    from sessiondag.context import cache as cache_mod
    from sessiondag.context.renderer import FAST, REFERENCE
    from sessiondag.store import node_index
    state, sid = tmp_path / "state", "sliced"
    store = SessionStore(state)
    store.start_session(sid, working_dir=str(tmp_path))
    s = store.session(sid)
    for i in range(120):  # the last 40 turns with nodes that do not render as one plain message
        odd = i >= 80 and i % 3 == 0
        u = s.append(Call("user", "alice", output=f"q{i} {TRICKY[i % len(TRICKY)]}", predecessor=s.head_id,
                          metadata={"memory_prefetch": "m"} if odd else {}))
        if called and i >= 80 and i % 4 == 1:  # a function the turn ran: rendered under its user node
            s.append(Call("code", "lookup", input={"k": i}, output=f"r{i} {TRICKY[i % len(TRICKY)]}", caller=u.id))
        s.append(Call("llm", "m", output=f"a{i} {TRICKY[(i + 3) % len(TRICKY)]}", predecessor=u.id,
                      caller=u.id if called else ROOT, status="error" if odd else "completed"))
        if i % 40 == 39:
            s.commit_turn()
    store.close()
    cold, ref = SessionStore(state), SessionStore(state)
    a, b = cold.session(sid), ref.session(sid)
    assert all(type(c._raw) is node_index.DeferredChunk for c in a.get_branch() if c.id != ROOT)
    got, _ = FAST.encoded(a)
    want, _ = REFERENCE.encoded(b)
    assert got == want
    left = [c for c in a.get_branch() if c.id != ROOT][:160]  # the plain turns
    assert all(type(c._raw) is node_index.DeferredChunk for c in left)  # no line given out
    assert {c._raw._view is not None for c in left} == {True}
    # a chunk holding a node the render decodes gave out its lines, to that node's read
    assert any(type(c._raw) is bytes for c in a.get_branch()[161:])
    cache_mod.drop_cache(a)
    assert FAST.encoded(a)[0] == want  # the same chunks, sliced again
    x = left[10]
    chunk = x._raw
    mates = [c for c in left if c._raw is chunk]
    assert x.output == b.graph.nodes[x.id].output  # a body read: its chunk gives out its lines
    assert chunk._view is None and all(type(c._raw) is bytes for c in mates)
    assert [c.to_dict() for c in mates] == [b.graph.nodes[c.id].to_dict() for c in mates]
    assert FAST.encoded(a)[0] == want  # warm, some lines given out, the rest sliced
    for ses in (a, b):
        ses.append(Call("user", "alice", output="one more", predecessor=ses.head_id))
    assert FAST.encoded(a)[0] == REFERENCE.encoded(b)[0]
    first = left[0]  # a user node that rendered alone calls a function now: rendered with it
    for ses in (a, b):
        ses.append(Call("code", "late", input={"k": 0}, output="late result", caller=first.id))
    got = FAST.encoded(a)[0]
    assert got == REFERENCE.encoded(b)[0] and any(b"late result" in m for m in got)
    cold.close()
    ref.close()
