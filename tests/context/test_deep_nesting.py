"""Deep nesting: metadata nested deeper than a JSON encoder can send back is refused before it is
written, as invalid params, at every entry; walks over a 1,500-deep caller chain (the call-tree
view, an in-frame render) are iterative and answer over RPC."""

import os
import sys

import pytest

from sessiondag import Call
from sessiondag.context import views
from sessiondag.context.render import render_context
from sessiondag.core.depth import MAX_DEPTH, TooDeepError
from sessiondag.core.errors import InvalidNodeError
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import DaemonProc, SchemaCheck  # noqa: E402

CHAIN = 1500


def nest(levels):
    """`levels` nested objects around a scalar."""
    v = "leaf"
    for _ in range(levels):
        v = {"k": v}
    return v


def deep_chain(s, depth=CHAIN):
    u = s.append(Call("user", "u", output="go", predecessor="ROOT"))
    llm = s.append(Call("llm", "m", output="calling", caller="ROOT", predecessor=u.id))
    caller, calls = llm.id, []
    for i in range(depth):
        c = Call("code", f"f{i % 3}", input={"i": i}, output=f"r{i}", caller=caller)
        calls.append(c)
        caller = c.id
    s.append_many(calls)
    return llm, calls


def tree_depth(t):
    depth, todo = 0, [(t, 1)]
    while todo:
        n, d = todo.pop()
        depth = max(depth, d)
        for k in n.get("children", []):
            todo.extend((i, d + 1) for i in k.get("items", [k]))
    return depth


def test_library_refuses_too_deep_fields_before_writing(tmp_path):
    store = SessionStore(tmp_path / "state")
    s = store.session(store.start_session("deep", working_dir=None).id)
    u = s.append(Call("user", "u", output="ok", predecessor="ROOT", metadata={"m": nest(MAX_DEPTH - 1)}))
    end = s.journal.offset
    for field in ("metadata", "input", "output"):
        kw = {field: {"m": nest(MAX_DEPTH)}} if field == "metadata" else {field: nest(MAX_DEPTH + 1)}
        with pytest.raises(TooDeepError):
            s.append(Call("user", "u", predecessor=u.id, **kw))
    with pytest.raises(TooDeepError):
        s.update(u.id, metadata={"m": nest(300)})
    with pytest.raises(TooDeepError):
        s.update(u.id, output=nest(300))
    with pytest.raises(TooDeepError):
        s.set_meta("x", nest(300))
    with pytest.raises(InvalidNodeError):  # not JSON at all: refused the same way, typed
        s.append(Call("user", "u", predecessor=u.id, output={"a": {1, 2}}))
    assert s.journal.offset == end and len(s.graph.nodes) == 2
    store.close()


def test_walks_over_a_deep_caller_chain_are_iterative(tmp_path):
    store = SessionStore(tmp_path / "state")
    s = store.session(store.start_session("chain", working_dir=None).id)
    llm, calls = deep_chain(s)
    t = views.call_tree(s)
    assert tree_depth(t) == views.MAX_TREE_DEPTH + 1
    sub = views.call_tree(s, calls[1000].id)  # the cut part is reached from its own root
    assert sub["id"] == calls[1000].id and sub["children"][0]["id"] == calls[1001].id
    r = render_context(s, frame=calls[-1].id)  # in the innermost frame: every caller is open
    ids = [n.id for n in r.nodes]
    assert llm.id in ids and calls[0].id in ids and calls[-1].id in ids
    r = render_context(s, frame=calls[CHAIN // 2].id)
    assert calls[CHAIN // 2].id in [n.id for n in r.nodes]
    store.close()


class RawClient:
    """JSON-RPC over the daemon's Unix socket, encoded with the stdlib (whose nesting limit is
    Python's recursion limit): the Python client's own encoder could not even send these values."""

    def __init__(self, path):
        import socket
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buf = b""
        self.n = 0
        self.call("initialize", {"client_name": "raw"})

    def call(self, method, params):
        import json
        self.n += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        while True:
            msg = self._read()
            if msg.get("id") == self.n:
                return msg

    def _read(self):
        import json
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = int(head.split(b":")[1])
        while len(rest) < length:
            rest += self.sock.recv(65536)
        self.buf = rest[length:]
        return json.loads(rest[:length])

    def close(self):
        self.sock.close()


@pytest.mark.anyio
@pytest.mark.process
async def test_over_rpc(tmp_path):
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    check = SchemaCheck()
    d = DaemonProc(["--socket", "--state-dir", str(state)])
    try:
        c = await connect_unix(d.socket)
        c.observer = check
        h = await c.open(working_dir=str(work))
        u, head = await c.append(h.id, {"role": "user", "name": "u", "output": "hi", "predecessor": "ROOT",
                                        "metadata": {"m": nest(150)}})
        assert (await c.get_node(h.id, u.id)).metadata == {"m": nest(150)}
        raw = RawClient(d.socket)
        try:
            for levels in (252, 253, 300):
                for method, params in [
                        ("session/append", {"node": {"role": "user", "name": "u", "output": "x",
                                                     "predecessor": head, "metadata": {"m": nest(levels)}}}),
                        ("session/update", {"node_id": u.id, "metadata": {"m": nest(levels)}}),
                        ("session/update", {"node_id": u.id, "output": nest(levels)}),
                        ("session/spawn_branch", {"caller_node_id": u.id, "source": "t", "content": nest(levels)})]:
                    r = raw.call(method, {"session_id": h.id, **params})
                    assert "error" in r and r["error"]["code"] == -32602, (levels, method, r)
                    assert r["error"]["data"]["kind"] == "invalid_params"
        finally:
            raw.close()
        assert [n.id for n in await c.get_branch(h.id)] == [u.id]  # nothing of them was written
        assert (await c.get_node(h.id, u.id)).metadata == {"m": nest(150)}
        # a 1,500-deep caller chain: the tree view and an in-frame render answer
        cur = u.id
        llm, cur = await c.append(h.id, {"role": "llm", "name": "m", "output": "", "predecessor": cur})
        caller, ids = llm.id, []
        for i in range(CHAIN):
            n, _ = await c.append(h.id, {"role": "code", "name": "f", "output": str(i), "caller": caller})
            ids.append(n.id)
            caller = n.id
        tree = await c.view(h.id, "tree")
        assert tree_depth(tree) == views.MAX_TREE_DEPTH + 1
        r = await c.call("session/render", {"session_id": h.id, "frame": ids[-1]})
        assert r["messages"]
        assert await c.commit(h.id)
        await c.aclose()
    finally:
        d.stop()
    check.assert_ok()
