"""Big spliced frames (a whole get_branch) are written straight from their pieces (rpc/outbox.py):
byte-exact on a real socket whatever the piece sizes and however slowly the peer reads; frames
sent meanwhile come after, in order; a client that stops reading or goes away mid-frame costs the
daemon nothing else (other clients are served, the daemon survives)."""

import os
import signal
import socket
import sys
import threading

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondag import ROOT, Call
from sessiondag.rpc import codec, outbox
from sessiondag.store import SessionStore

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import DaemonProc  # noqa: E402


def _read_all(sock, n, chunk):
    got = bytearray()
    while len(got) < n:
        b = sock.recv(chunk)
        if not b:
            break
        got += b
    return bytes(got)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 70_000), min_size=1, max_size=1500), chunk=st.sampled_from([1, 4096, 1 << 20]))
def test_send_pieces_writes_every_byte_in_order(sizes, chunk):
    pieces = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    want = b"".join(pieces)
    a, b = socket.socketpair()
    try:
        a.setblocking(False)  # as an asyncio transport's socket is
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # many partial sends
        t = threading.Thread(target=outbox.send_pieces, args=(a.fileno(), pieces, threading.Event()))
        t.start()
        got = _read_all(b, len(want), chunk if len(want) < 2_000_000 else 1 << 16)
        t.join()
        assert got == want
        assert not a.getblocking()  # the shared descriptor stays non-blocking
    finally:
        a.close()
        b.close()


def test_a_send_to_a_peer_that_went_away_raises_and_stops():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.close()
    with pytest.raises(OSError):
        outbox.send_pieces(a.fileno(), [b"x" * 100_000] * 100, threading.Event())
    a.close()


SID = "bulk"


def _big_session(state):
    """A session of ~6 MB of node JSON (above outbox.BULK_BYTES); its branch as dicts."""
    store = SessionStore(state)
    store.start_session(SID, working_dir=None)
    s = store.session(SID)
    head, calls = ROOT, []
    for i in range(6000):  # ~6 MB of node JSON: above outbox.BULK_BYTES
        c = Call("user" if i % 2 == 0 else "llm", "n", output=f"{i} " + "é\"\\ word " * 90, predecessor=head)
        head = c.id
        calls.append(c)
    s.append_many(calls)
    s.commit_turn()
    want = [c.to_dict() for c in s.get_branch()]
    store.close()
    return want


def _serve(root, state):
    env = dict(os.environ, SESSIONDAG_HOME=str(root / "home"), XDG_RUNTIME_DIR=str(root))
    return DaemonProc(["--socket", str(root / "d.sock"), "--state-dir", state], env=env)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("bulk")
    state = str(root / "state")
    want = _big_session(state)
    d = _serve(root, state)
    try:
        yield d, want
    finally:
        d.stop(signal.SIGTERM)


class Raw:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = codec.FrameBuffer()
        self.frames = []

    def send(self, rid, method, params):
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if rid is not None:
            msg["id"] = rid
        self.s.sendall(codec.encode(msg))

    def read(self, n):
        while len(self.frames) < n:
            data = self.s.recv(1 << 16)
            assert data, "daemon closed the connection"
            self.frames += [orjson.loads(f) for f in self.buf.feed(data)]
        out, self.frames = self.frames[:n], self.frames[n:]
        return out

    def close(self):
        self.s.close()


@pytest.mark.slow
def test_a_big_get_branch_and_the_frames_behind_it_arrive_whole_and_in_order(daemon):
    d, want = daemon
    c = Raw(d.socket)
    try:
        c.send(0, "session/open", {"session_id": SID, "working_dir": "/", "allow_working_dir_mismatch": True})
        assert "result" in c.read(1)[0]
        c.send(1, "session/subscribe", {"session_id": SID})
        assert "result" in c.read(1)[0]
        # pipelined while nothing is read: the big frame blocks on a full socket, the ping's answer
        # and the write's notification wait behind it
        c.send(2, "session/get_branch", {"session_id": SID})
        c.send(3, "daemon/ping", {})
        c.send(4, "session/append", {"session_id": SID, "node": {"role": "user", "name": "late",
                                                                   "output": "after", "predecessor": want[-1]["id"]}})
        frames = c.read(4)  # 3 answers + the did_change notification, each whole
        by_id = {f["id"]: f["result"] for f in frames if "id" in f}
        late = by_id[4]["node"]
        # (requests run concurrently: the whole branch may be read before or after the append)
        assert by_id[2]["nodes"] in (want, want + [late]) and by_id[3] == {}
        note = [f for f in frames if f.get("method") == "session/did_change"]
        assert note and note[0]["params"]["changes"][0]["node"]["id"] == late["id"]
        c.send(5, "session/get_branch", {"session_id": SID})
        c.send(6, "session/get_branch", {"session_id": SID, "limit": 2, "order": "desc"})
        c.send(7, "session/get_branch", {"session_id": SID})
        by_id = {f["id"]: f["result"] for f in c.read(3)}
        assert by_id[5]["nodes"] == by_id[7]["nodes"] == want + [late]
        assert by_id[6]["nodes"] == [late, want[-1]]
    finally:
        c.close()


def test_clients_that_stop_reading_or_leave_mid_frame_cost_nothing_else(daemon):
    d, want = daemon
    lazy, gone = Raw(d.socket), Raw(d.socket)
    for c in (lazy, gone):
        c.send(0, "session/open", {"session_id": SID, "working_dir": "/", "allow_working_dir_mismatch": True})
        c.read(1)
        for i in range(1, 4):
            c.send(i, "session/get_branch", {"session_id": SID})
    gone.s.recv(1000)  # a little of the first frame, then away
    gone.close()
    other = Raw(d.socket)
    try:
        for i in range(3):  # served while `lazy` holds frames it never reads
            other.send(i, "daemon/ping", {})
            assert other.read(1)[0] == {"jsonrpc": "2.0", "id": i, "result": {}}
        other.send(9, "session/get_branch", {"session_id": SID, "limit": 1})
        assert other.read(1)[0]["result"]["nodes"][0]["id"] == want[0]["id"]
        lazy.close()
        other.send(10, "daemon/status", {})
        assert "result" in other.read(1)[0]
        assert d.proc.poll() is None
    finally:
        other.close()


@pytest.mark.process   # a child process (tests/tiers.py)
def test_a_daemon_told_to_stop_does_not_wait_for_a_client_that_stopped_reading(tmp_path):
    """SIGTERM while a big frame is blocked on a client that reads nothing: the send is given up at
    once (it used to wait out STALL, 120 s, before the daemon could exit)."""
    state = str(tmp_path / "state")
    _big_session(state)
    d = _serve(tmp_path, state)
    lazy = Raw(d.socket)
    try:
        lazy.send(0, "session/open", {"session_id": SID, "working_dir": "/", "allow_working_dir_mismatch": True})
        lazy.read(1)
        lazy.send(1, "session/get_branch", {"session_id": SID})
        assert lazy.s.recv(1000)  # the frame has begun; the rest waits on a full socket
        d.proc.send_signal(signal.SIGTERM)
        assert d.stop(timeout=outbox.STALL / 4) == 0
    finally:
        lazy.close()
        if d.proc.poll() is None:
            d.proc.kill()
