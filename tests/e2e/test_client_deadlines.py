"""Deadlines on the client side (issue 19 item 17): against a SIGSTOPped daemon the Python client and
`sessiondag daemon status` give up after their (settable) timeout with a typed DaemonNotResponding
naming the daemon's pid, instead of hanging; a daemon that is alive but slow to answer one request
(a long `daemon/ping`) is not given up on: the client probes it and keeps waiting."""

import os
import signal
import subprocess
import sys

import anyio
import pytest

from sessiondag_client import DaemonNotResponding, connect, connect_unix

pytestmark = pytest.mark.anyio
CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


async def test_a_stopped_daemon_is_not_waited_for_forever(socket_daemon, state_dir):
    d = socket_daemon
    c = await connect_unix(d.socket, timeout=1.0)
    try:
        assert await c.ping(delay=2.5) == {}  # slower than the timeout, but alive: probed, waited for
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(DaemonNotResponding) as ei:
                await c.status()
            assert ei.value.pid == d.proc.pid and ei.value.method == "daemon/status"
            assert str(d.proc.pid) in str(ei.value)
            with pytest.raises(DaemonNotResponding) as ei:  # a new connection: the handshake times out
                await connect(state_dir=str(state_dir), timeout=1.0)
            assert ei.value.pid == d.proc.pid
            r = subprocess.run(CLI + ["daemon", "status", "--state-dir", str(state_dir), "--timeout", "1"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 1 and f"pid {d.proc.pid}" in r.stderr, r
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
    finally:
        with anyio.CancelScope(shield=True):
            await c.aclose()
    async with await connect_unix(d.socket, timeout=5.0) as again:  # alive again once continued
        assert (await again.status())["pid"] == d.proc.pid
