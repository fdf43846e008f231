"""A remote that stalls or sends too much gets a typed error, within the bounds, and nothing local
changes: real misbehaving servers on 127.0.0.1 (git:// and smart HTTP), started by the test."""

import os
import socket
import threading

import pytest

from sessiondag.sync import listing, pull, push
from sessiondag.sync.errors import RemoteStalledError, RemoteTooMuchError
from sessiondag.sync.remotes import Remote
from sessiondag.sync.transport import Bounds
from sessiondag.core.settings import Settings

from . import git_servers
from .conftest import add_turn, disk_state, make_session, store_at


class Misbehaving:
    """A TCP server on 127.0.0.1 whose every connection gets `behave(conn)` in a thread."""

    def __init__(self, behave):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.behave, self.conns, self.done = behave, [], threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn):
        try:
            self.behave(conn, self.done)
        except OSError:
            pass

    def close(self):
        self.done.set()
        self.sock.close()
        for c in self.conns:
            c.close()


def silent(conn, done):
    conn.recv(65536)          # the request, then nothing: a stalled server
    done.wait(120)


def pkt(line: bytes) -> bytes:
    return b"%04x" % (len(line) + 4) + line


def endless_git(conn, done):
    conn.recv(65536)
    endless_git_body(conn, done)


def endless_http(conn, done):
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\n"
                 b"Connection: close\r\n\r\n" + pkt(b"# service=git-upload-pack\n") + b"0000")
    endless_git_body(conn, done)


def endless_git_body(conn, done):
    """A ref advertisement that never ends."""
    conn.sendall(pkt(b"1" * 40 + b" HEAD\0multi_ack side-band-64k ofs-delta\n"))
    i = 0
    while not done.is_set():
        conn.sendall(b"".join(pkt(b"%040x refs/heads/b%d\n" % (i + k, i + k)) for k in range(200)))
        i += 200


@pytest.fixture
def local(tmp_path):
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a = store_at(tmp_path / "a")
    s = make_session(a, "s", wd, turns=1)
    yield a, s
    a.close()


@pytest.mark.parametrize("scheme", ["git", "http"])
def test_a_stalled_remote_is_given_up_typed(local, scheme):
    a, s = local
    srv = Misbehaving(silent)
    try:
        url = f"{scheme}://127.0.0.1:{srv.port}/sessions.git"
        r = Remote("stall", url, None, Bounds(idle_s=0.5))
        before = disk_state(s.path)
        for call in (lambda: listing.list_remote(r), lambda: pull.pull(a, r, "s")):
            with pytest.raises(RemoteStalledError) as e:
                call()
            assert e.value.code == "sync_unreachable"
            assert e.value.data()["reason"] == "timeout" and e.value.data()["url"] == url
        with pytest.raises(RemoteStalledError):
            push.push(a, Remote("stall", url, None, Bounds(idle_s=0.5)), "s", Settings())
        assert disk_state(s.path) == before
    finally:
        srv.close()


@pytest.mark.parametrize("scheme,behave", [("git", endless_git), ("http", endless_http)])
def test_a_remote_that_sends_too_much_is_stopped_typed(local, scheme, behave):
    a, s = local
    srv = Misbehaving(behave)
    try:
        url = f"{scheme}://127.0.0.1:{srv.port}/sessions.git"
        r = Remote("flood", url, None, Bounds(idle_s=30, max_bytes=256 << 10))
        before = disk_state(s.path)
        for call in (lambda: listing.list_remote(r), lambda: pull.pull(a, r, "s")):
            with pytest.raises(RemoteTooMuchError) as e:
                call()
            assert e.value.code == "sync_bad_remote_data"
            assert e.value.data()["reason"] == "too_much" and e.value.data()["limit"] == 256 << 10
        assert disk_state(s.path) == before
    finally:
        srv.close()


def test_the_bounds_come_from_the_settings():
    b = Bounds.of(Settings(transfer_idle_s=2.5, max_receive_bytes=1000))
    assert b == Bounds(2.5, 1000) and Bounds.of(Settings()) == Bounds()


STALL = """#!/bin/sh
# the client's own git command, its output cut after $1 bytes; then silence, the connection kept
# open (sshd and its keepalives alive) until the client goes
eval "$SSH_ORIGINAL_COMMAND" | head -c {cut}
exec cat > /dev/null
"""


@pytest.mark.process
@pytest.mark.parametrize("what,cut", [("pull", 20000), ("list", 60), ("push", 60)])
def test_a_live_ssh_server_that_stops_sending_is_given_up_typed(local, tmp_path, monkeypatch, what, cut):
    """A real sshd on 127.0.0.1 whose git stops sending mid-transfer (in the middle of the pack
    of a pull; of the ref advertisement of a list or a push): the transfer ends in
    sync_unreachable {reason: timeout}, nothing local changed."""
    a, s = local
    base = str(tmp_path / "srv-ssh")
    os.makedirs(base)
    script = os.path.join(base, "stall.sh")
    with open(script, "w") as f:
        f.write(STALL.format(cut=cut))
    os.chmod(script, 0o755)
    srv, env = git_servers.ssh_server(base, force_command=script)
    monkeypatch.setenv("GIT_SSH_COMMAND", env["GIT_SSH_COMMAND"])
    try:
        add_turn(s, "big", tool_output=os.urandom(300_000).hex())   # a pack far longer than the cut
        push.push(a, Remote("direct", srv.repo, None, Bounds()), "s", Settings())   # by path: not cut
        add_turn(s, "one more")
        before = disk_state(s.path)
        r = Remote("stall", srv.url, None, Bounds(idle_s=1.0))
        call = {"pull": lambda: _fresh_pull(tmp_path, srv.url),
                "list": lambda: listing.list_remote(r),
                "push": lambda: push.push(a, r, "s", Settings())}[what]
        with pytest.raises(RemoteStalledError) as e:
            call()
        assert e.value.code == "sync_unreachable"
        assert e.value.data()["reason"] == "timeout" and e.value.data()["url"] == srv.url
        assert disk_state(s.path) == before
    finally:
        srv.close()


def _fresh_pull(tmp_path, url):
    """A clone into a state dir of its own (the whole pack comes over the cut connection)."""
    b = store_at(tmp_path / "b")
    try:
        pull.clone(b, Remote("stall", url, None, Bounds(idle_s=1.0)), "s", working_dir=str(tmp_path / "wd"))
    finally:
        b.close()
