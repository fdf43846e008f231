"""Socket placement and permissions, one daemon per state dir, stale sockets, long paths."""

import os
import signal
import stat

import pytest

from sessiondag.rpc.transports import default_socket_path, runtime_dir
from sessiondag_client import connect_unix

pytestmark = pytest.mark.anyio


async def test_default_socket_is_private(socket_daemon, state_dir, tmp_path):
    path = socket_daemon.socket
    assert path == default_socket_path(str(state_dir))
    assert os.path.dirname(path) == os.path.join(os.environ["XDG_RUNTIME_DIR"], "sessiondag") == runtime_dir()
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    c = await connect_unix(path)
    assert (await c.status())["pid"] == socket_daemon.proc.pid
    await c.aclose()


async def test_a_socket_path_beyond_the_af_unix_limit_works(daemon_factory, state_dir, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = str(deep / "daemon.sock")
    assert len(path.encode()) > 108
    d = daemon_factory("--socket", path, "--state-dir", str(state_dir))
    assert d.socket == path
    c = await connect_unix(path)
    assert await c.ping() == {}
    await c.aclose()


def test_a_second_daemon_on_the_same_state_dir_exits_with_a_clear_message(socket_daemon, daemon_factory, state_dir):
    second = daemon_factory("--socket", "--state-dir", str(state_dir), wait_ready=False)
    assert second.proc.wait(30) == 3
    second._t.join(5)
    msg = "\n".join(second.lines)
    assert "another sessiondag daemon already serves state dir" in msg
    assert f"pid={socket_daemon.proc.pid}" in msg and socket_daemon.socket in msg
    assert socket_daemon.proc.poll() is None


async def test_stale_socket_of_a_killed_daemon_is_cleaned_up(daemon_factory, state_dir):
    first = daemon_factory("--socket", "--state-dir", str(state_dir))
    path = first.socket
    first.stop(signal.SIGKILL)
    assert os.path.exists(path)  # left behind by the killed daemon
    second = daemon_factory("--socket", "--state-dir", str(state_dir))
    assert second.socket == path
    c = await connect_unix(path)
    assert (await c.status())["pid"] == second.proc.pid
    await c.aclose()


def test_tcp_binds_loopback_only(daemon_factory, state_dir):
    d = daemon_factory("--tcp", "0.0.0.0:0", "--state-dir", str(state_dir), wait_ready=False)
    assert d.proc.wait(30) == 3
    d._t.join(5)
    assert any("loopback only" in line for line in d.lines)
