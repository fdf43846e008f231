import os
import signal

import pytest

from e2e_support import DaemonProc, SchemaCheck


@pytest.fixture
def daemon_factory(tmp_path):
    started: list[DaemonProc] = []

    def start(*args: str, wait_ready: bool = True) -> DaemonProc:
        d = DaemonProc(list(args), wait_ready=wait_ready)
        started.append(d)
        return d
    yield start
    for d in started:
        if d.proc.poll() is None:
            try:
                d.stop(signal.SIGTERM, timeout=30)
            except Exception:
                d.proc.kill()
                d.proc.wait()


@pytest.fixture
def socket_daemon(daemon_factory, state_dir):
    return daemon_factory("--socket", "--state-dir", str(state_dir))


@pytest.fixture
def check():
    c = SchemaCheck()
    yield c
    c.assert_ok()
