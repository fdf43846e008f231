"""The client's typed decode of a big session/get_branch answer (branch_decode.py) gives the
Calls the generic path (orjson, then `calls_of`) gives, for any frame — or declines it, and the
generic path decodes it as before; a branch as the daemon sends it takes the typed path, and over a
real daemon and socket the client's get_branch gives the same Calls either way."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import orjson
import pytest
from hypothesis import assume, given, settings, strategies as st

from sessiondag import Call as StoreCall
from sessiondag.rpc import session_methods  # noqa: F401  (registers session/*)
from sessiondag.rpc.connection import Connection
from sessiondag.rpc.daemon import Daemon
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix
from sessiondag_client.branch_decode import BranchAnswer, answer_id, decode_branch
from sessiondag_client.wire.codec import BIG_BODY
from sessiondag_client.wire.types import Call, calls_of

from test_client_decode import FIELDS, json_value, node_objects as plain_variants, wire_node

odd_value = json_value | st.floats(allow_nan=False, allow_infinity=False) | st.integers(0, 10**6).map(float)


@st.composite
def node_objects(draw):
    """test_client_decode's nodes (as the daemon sends them; fields nulled, left out, extra), and a
    field of another type than the Call declares."""
    d = draw(plain_variants())
    if draw(st.booleans()):
        d[draw(st.sampled_from(FIELDS))] = draw(odd_value)
    return d


def _frame(nodes, rid=7, head="h", cursor=None, total=None):
    try:
        return _dumps(nodes, rid, head, cursor, total)
    except orjson.JSONEncodeError:  # an integer past 64 bits: not JSON the daemon writes
        assume(False)


def _dumps(nodes, rid, head, cursor, total):
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {
        "nodes": nodes, "head_id": head, "next_cursor": cursor, "total": len(nodes) if total is None else total}})


def _generic(body):
    r = orjson.loads(body)["result"]
    return calls_of(r["nodes"]), r


@settings(deadline=None, max_examples=150)
@given(st.lists(node_objects(), max_size=6), st.none() | st.text(max_size=4))
def test_typed_decode_gives_the_generic_calls_or_declines(nodes, cursor):
    body = _frame(nodes, cursor=cursor)
    got = decode_branch(body)
    try:
        want, r = _generic(body)
    except TypeError:  # role or name missing/null: the generic path refuses, and the typed one declined
        assert got is None
        return
    if got is None:
        return  # declined: the generic path is the answer
    assert type(got) is BranchAnswer and all(type(c) is Call for c in got.nodes)
    assert got.nodes == want
    assert (got.head_id, got.next_cursor, got.total) == (r["head_id"], r["next_cursor"], r["total"])
    for a, b in zip(got.nodes, want):
        assert a.to_dict() == b.to_dict()
        for k in FIELDS:  # the same types too, but created_at as the float it is declared as
            va, vb = getattr(a, k), getattr(b, k)
            assert type(va) is (float if k == "created_at" else type(vb)), k


@settings(deadline=None, max_examples=100)
@given(st.lists(wire_node, min_size=1, max_size=6))
def test_a_branch_as_the_daemon_sends_it_takes_the_typed_path(nodes):
    body = _frame(nodes)
    got = decode_branch(body)
    assert got is not None and got.nodes == _generic(body)[0]
    assert repr(got.nodes) == repr(_generic(body)[0])


def test_which_frames_name_their_request():
    big = _frame([{"role": "user", "name": "u", "output": "x" * BIG_BODY}], rid=123)
    assert answer_id(big) == 123
    assert answer_id(_frame([], rid=123)) is None  # small: the generic path is as fast
    err = orjson.dumps({"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "x" * BIG_BODY}})
    assert answer_id(err) is None
    other_order = orjson.dumps({"id": 5, "jsonrpc": "2.0", "result": {"nodes": [], "pad": "x" * BIG_BODY}})
    assert answer_id(other_order) is None
    assert decode_branch(b'{"jsonrpc":"2.0","id":1,"result":{"nodes":[') is None  # truncated: declined
    assert decode_branch(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": [1]})) is None


@pytest.mark.process   # a child process (tests/tiers.py)
def test_importing_the_client_does_not_import_msgspec():
    """msgspec is imported when the first big branch is decoded, not with the client."""
    code = """if True:
        import sys, orjson
        import sessiondag_client, sessiondag_client.client
        from sessiondag_client import branch_decode
        from sessiondag_client.wire.codec import BIG_BODY
        before = "msgspec" in sys.modules
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"nodes": [
            {"role": "user", "name": "u", "output": "x" * BIG_BODY}], "head_id": "h", "next_cursor": None, "total": 1}})
        r = branch_decode.decode_branch(body)
        print(before, "msgspec" in sys.modules, type(r) is branch_decode.BranchAnswer)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    assert out.stdout.split() == ["False", "True", "True"], out.stderr


@pytest.mark.anyio
async def test_get_branch_over_a_daemon_is_the_same_either_way(tmp_path):
    state, work, sock = str(tmp_path / "state"), str(tmp_path / "work"), str(tmp_path / "d.sock")
    os.makedirs(work)
    store = SessionStore(state)
    store.start_session("big", working_dir=work)
    s = store.session("big")
    head = "ROOT"
    for i in range(400):  # ~1.6 MB of nodes: a frame the typed path takes
        c = s.append(StoreCall("user" if i % 2 == 0 else "llm", "chat", output=f"{i} é\n\"q\" " + "w" * 4000,
                               predecessor=head, metadata={"i": i, "nested": [i, None, {"k": 1.5}]}))
        head = c.id
    s.commit_turn()
    daemon = Daemon(store, max_threads=2)
    await daemon.start()

    async def serve(reader, writer):
        await Connection(daemon, reader, writer, transport="socket").run()
    server = await asyncio.start_unix_server(serve, sock)
    client = await connect_unix(sock)
    try:
        await client.open("big", working_dir=work)
        taken = []

        def counting(body):
            r = decode_branch(body)
            taken.append(r is not None)
            return r
        r = await client.call("session/get_branch", {"session_id": "big"}, decode=counting)
        assert taken == [True] and isinstance(r, BranchAnswer) and len(r.nodes) == 400
        typed = await client.get_branch("big")
        client.observer = lambda method, msg: None  # an observer sees the raw messages: the generic path
        generic = await client.get_branch("big")
        small = await client.get_branch("big", limit=3)  # a small page: the generic path
        assert typed == generic and typed[-1].id == head and small == generic[:3]
        assert [c.to_dict() for c in typed] == [c.to_dict() for c in generic]
    finally:
        await client.aclose()
        server.close()
        await daemon.shutdown()
        store.close()
