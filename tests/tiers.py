"""Test tiers: `make test` runs everything; `make test-fast` (`pytest --tier=fast`) runs the unit and
in-process tests only — no child process, no network of any kind (loopback included), no editor,
nothing that needs root — and checks that they keep to it.

A test says what it needs with markers (a module's `pytestmark`, or one test's decorator):

    process   starts a child process (a daemon, the CLI, git, a child writer, a sandbox)
    network   listens on or connects to an IP socket (loopback HTTP/TCP servers, TCP transports)
    editor    drives a real editor (Neovim, VS Code); implies process
    root      needs root (apt-installed tools, sshd, namespaces); implies process
    slow      in-process but takes seconds, not milliseconds (hypothesis campaigns, big graphs)

Whole directories whose tests all need the same are listed in DIRECTORY_NEEDS instead of marking
every module. Under `--tier=fast` the tests marked with any of these are deselected, and the others
run with a guard: starting a process or opening an IP socket fails the test, naming the marker it
lacks — even when the code under test catches the refusal (a tool that reports it as its output),
since the guard also fails the test at its end. So the fast tier cannot quietly grow a daemon or a
network call. (The long campaigns' sizes are another switch: SESSIONDAG_SLOW=1, docs/reliability.md.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile

import pytest

NEEDS = {
    "process": "starts a child process (a daemon, the CLI, git, a child writer, a sandbox)",
    "network": "listens on or connects to an IP socket (loopback servers, TCP transports)",
    "editor": "drives a real editor (Neovim, VS Code)",
    "root": "needs root (apt-installed tools, sshd, namespaces)",
    "slow": "in-process but takes seconds (hypothesis campaigns, big graphs): left out of make test-fast",
}

# tests/<dir> -> what every test under it needs (a module may add more with its own pytestmark)
DIRECTORY_NEEDS: dict[str, set[str]] = {
    "acp": {"process"},             # a spawned `sessiondag acp` and its daemon
    "cli": {"process"},             # the CLI as a subprocess, in a pty or tmux
    "e2e": {"process"},             # a real daemon process
    "editors": {"process", "editor"},
    "integrations": {"process"},    # framework children (agents_child.py, lg_child.py)
    "mcp": {"process"},             # MCP servers as child processes
    "reliability": {"process"},     # campaigns against daemon processes
    "report": {"process", "network"},   # chromium over its DevTools WebSocket, the CLI, the live viewer
    "sync": {"process", "network", "root"},   # git daemon, git http-backend, sshd on 127.0.0.1
}

# where the fast tier's temporary files go when TMPDIR does not say: a tmpfs, so that the edit-test
# loop measures the code and not the disk (the store still makes every fsync; the tests that need a
# real disk's behaviour — power loss, a full file system — are in the full suite)
FAST_TMPDIR = "/dev/shm"

# seconds per test (pytest-timeout): the default of the whole suite is in pyproject.toml; --tier=fast
# and the long campaigns (SESSIONDAG_SLOW=1) get their own unless --timeout says otherwise
FAST_TIMEOUT = 60.0
SLOW_TIMEOUT = 3600.0


class TierViolation(AssertionError):
    """A test of the fast tier did what only the full suite may do."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tier", choices=("all", "fast"), default="all",
                     help="fast: unit and in-process tests only (make test-fast); all: every test (make test)")


@pytest.hookimpl(tryfirst=True)   # before pytest-timeout reads the timeout
def pytest_configure(config: pytest.Config) -> None:
    for name, doc in NEEDS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    if config.getoption("timeout", None) is None and not os.environ.get("PYTEST_TIMEOUT"):
        if config.getoption("--tier") == "fast":
            config.option.timeout = FAST_TIMEOUT
        elif os.environ.get("SESSIONDAG_SLOW"):   # the long campaigns (docs/reliability.md)
            config.option.timeout = SLOW_TIMEOUT
    if config.getoption("--tier") == "fast" and not os.environ.get("TMPDIR") and config.option.basetemp is None \
            and os.path.isdir(FAST_TMPDIR) and os.access(FAST_TMPDIR, os.W_OK):
        tempfile.tempdir = FAST_TMPDIR   # tmp_path's numbered dirs (pytest-of-<user>/pytest-N) go there


def needs_of(item: pytest.Item) -> set[str]:
    """What a collected test needs: its directory's needs and its own markers (editor, root: process)."""
    rel = os.path.relpath(str(item.path), os.path.dirname(os.path.abspath(__file__)))
    top = rel.split(os.sep)[0]
    needs = set(DIRECTORY_NEEDS.get(top, ()))
    needs |= {m.name for m in item.iter_markers() if m.name in NEEDS}
    if needs & {"editor", "root"}:
        needs.add("process")
    return needs


def pytest_ignore_collect(collection_path, config):
    """Under --tier=fast a directory whose every test needs more is not even imported (its modules
    import the ACP SDK, LangGraph, … for nothing)."""
    if config.getoption("--tier") != "fast":
        return None
    rel = os.path.relpath(str(collection_path), os.path.dirname(os.path.abspath(__file__)))
    return True if rel.split(os.sep)[0] in DIRECTORY_NEEDS else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--tier") != "fast":
        return
    keep, drop = [], []
    for item in items:
        (drop if needs_of(item) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _refuse(what: str, marker: str, seen: list[str]):
    def refused(*args, **kwargs):
        message = (f"this test {what}, which the fast tier does not allow: mark it "
                   f"`pytest.mark.{marker}` (it then runs in `make test` only)")
        seen.append(message)
        raise TierViolation(message)
    return refused


def _noted(what: str, marker: str, seen: list[str], original):
    """The full suite's side of the guard: the call goes through, and the test fails at its end."""
    def noted(*args, **kwargs):
        seen.append(f"this test {what}, so the fast tier (make test-fast) would refuse it: mark it "
                    f"`pytest.mark.{marker}`")
        return original(*args, **kwargs)
    return noted


@pytest.fixture(autouse=True)
def _fast_tier_guard(request, monkeypatch):
    """Under --tier=fast: no child process, no IP socket (Unix sockets and socketpairs are fine). In
    the full suite the tests the fast tier would run are watched the same way (their calls go
    through), so a test that needs a marker fails in `make test` too, not only in `make test-fast`."""
    fast = request.config.getoption("--tier") == "fast"
    if not fast and needs_of(request.node):
        yield
        return
    seen: list[str] = []

    def guard(what, marker, original):
        return _refuse(what, marker, seen) if fast else _noted(what, marker, seen, original)
    monkeypatch.setattr(subprocess.Popen, "_execute_child",
                        guard("starts a child process", "process", subprocess.Popen._execute_child))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, guard("starts a child process", "process", getattr(os, name)))
    network = guard("opens an IP socket", "network", lambda: None)
    for name in ("connect", "connect_ex", "bind"):
        original = getattr(socket.socket, name)

        def guarded(self, address, *rest, _original=original):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                network()
            return _original(self, address, *rest)
        monkeypatch.setattr(socket.socket, name, guarded)
    yield
    if seen:   # refused, or noted, even if the code under test caught it
        pytest.fail(seen[0], pytrace=False)
