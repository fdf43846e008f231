"""`sessiondag daemon …`, discovery through the state dir, auto-start failures, `serve` setup errors."""

import contextlib
import fcntl
import json
import os
import signal
import subprocess

import pytest

from clitest_support import CLI, env_for, sd
from waiting import wait_until
from sessiondag_client import DaemonNotRunningError, DaemonStartError, SyncClient, connect


def test_start_status_other_runtime_dir_logs_stop(home, tmp_path, workdir):
    r = sd(["daemon", "status"], home=home)
    assert r.returncode == 3 and "not running" in r.stdout and "sessiondag daemon start" in r.stdout
    r = sd(["daemon", "start", "--json"], home=home)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["started"] is True and os.path.exists(info["socket"])
    again = json.loads(sd(["daemon", "start", "--json"], home=home).stdout)
    assert again["pid"] == info["pid"] and again["started"] is False   # one daemon per state dir

    # a shell whose XDG_RUNTIME_DIR differs reaches the same daemon through the state dir
    other_rt = tmp_path / "other-runtime"
    other_rt.mkdir(mode=0o700)
    r = sd(["daemon", "status", "--json"], home=home, env={"XDG_RUNTIME_DIR": other_rt})
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["running"] and st["pid"] == info["pid"] and st["socket"] == info["socket"]
    assert st["log_path"] == str(home / "daemon.log") and st["defaults"]["provider"] == "scripted"
    assert st["running_turns"] == [] and st["version"] and st["uptime_s"] >= 0
    assert any(c["client_info"].get("name") == "sessiondag daemon status" for c in st["clients"])

    text = sd(["daemon", "status"], home=home, env={"XDG_RUNTIME_DIR": other_rt}).stdout
    for label in ("pid", "version", "uptime", "socket", "transports", "log", "provider", "sessions", "turns",
                  "clients"):
        assert any(line.startswith(label + " ") for line in text.splitlines()), (label, text)

    # the Python client applies the same rule
    os.environ["XDG_RUNTIME_DIR"] = str(other_rt)  # restored by the autouse fixture (monkeypatch)
    with SyncClient.connect(state_dir=str(home)) as c:
        assert c.status()["pid"] == info["pid"]

    r = sd(["daemon", "logs"], home=home)
    assert r.returncode == 0 and f"ready pid={info['pid']}" in r.stdout
    r = sd(["daemon", "stop"], home=home)
    assert r.returncode == 0 and f"stopped pid={info['pid']}" in r.stdout
    assert not (home / "daemon.pid").exists()
    assert sd(["daemon", "status"], home=home).returncode == 3


def test_missing_daemon_is_one_clear_error(home):
    home.mkdir()
    with pytest.raises(DaemonNotRunningError) as ei:
        SyncClient.connect(state_dir=str(home))
    msg = str(ei.value)
    assert str(home) in msg and ei.value.socket in msg and "sessiondag daemon start" in msg
    assert isinstance(ei.value, ConnectionError)


@pytest.mark.anyio
async def test_auto_start_fails_fast_with_the_childs_message(home):
    """The state dir is held by a lock no daemon answers for: the child exits with its reason, and
    the client reports that reason (it does not wait out start_timeout)."""
    home.mkdir()
    fd = os.open(home / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(DaemonStartError) as ei:
            await connect(state_dir=str(home), auto_start=True, start_timeout=600)
        assert "already serves state dir" in str(ei.value) and "exited with status 3" in str(ei.value)
    finally:
        os.close(fd)


@pytest.mark.anyio
async def test_auto_start_then_reuse(home):
    c1 = await connect(state_dir=str(home), auto_start=True)
    c2 = await connect(state_dir=str(home), auto_start=True)
    try:
        assert (await c1.status())["pid"] == (await c2.status())["pid"]
    finally:
        await c1.aclose()
        await c2.aclose()


@pytest.mark.anyio
async def test_auto_start_runs_the_cli_starter_once_for_racing_clients(home):
    """Issue 22, 2: the client runs `sessiondag daemon start --wait --json` (it does not spawn
    `serve` itself): the daemon is not this process's child, logs where `daemon logs` reads, and
    clients that start at once end up on one daemon."""
    import anyio
    clients = []

    async def one():
        clients.append(await connect(state_dir=str(home), auto_start=True))
    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(one)
    try:
        pids = {(await c.status())["pid"] for c in clients}
        assert len(pids) == 1
        (pid,) = pids
        ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        assert ppid != os.getpid()                       # detached by the CLI, not spawned by the client
        st = await clients[0].status()
        assert st["log_path"] == str(home / "daemon.log")
        assert f"ready pid={pid}" in sd(["daemon", "logs"], home=home).stdout
    finally:
        for c in clients:
            await c.aclose()


def test_start_without_waiting_names_the_daemon_at_once(home):
    r = sd(["daemon", "start", "--no-wait", "--json"], home=home)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["started"] is True and info["ready"] is False and info["log"] == str(home / "daemon.log")
    ready = json.loads(sd(["daemon", "start", "--wait", "--json"], home=home).stdout)   # waits for that one
    assert ready["pid"] == info["pid"] and ready["socket"] == info["socket"]


def _holds(pid: int, path) -> bool:
    """Has process `pid` opened `path` (its fds in /proc)?"""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
    return False


def test_a_start_waits_for_the_start_under_way(home):
    """`start --no-wait`'s child holds daemon.starting until it answers: a second `start --wait`
    waits for that child and returns it, even when the child is slow (here: stopped), instead of
    spawning a rival that wins the state dir's lock first."""
    r = sd(["daemon", "start", "--no-wait", "--json"], home=home)
    assert r.returncode == 0, r.stderr
    first = json.loads(r.stdout)["pid"]
    os.kill(first, signal.SIGSTOP)   # a start under way, as slow as a loaded machine makes it
    waiter = subprocess.Popen(CLI + ["daemon", "start", "--wait", "--json", "--state-dir", str(home)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(home))
    try:
        wait_until(lambda: waiter.poll() is not None or _holds(waiter.pid, home / "daemon.starting"),
                   "the waiter to return or to reach the start lock", timeout=60)
        os.kill(first, signal.SIGCONT)
        out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, err
        got = json.loads(out)
        assert got["pid"] == first and got["started"] is False
    finally:
        os.kill(first, signal.SIGCONT)
        if waiter.poll() is None:
            waiter.kill()
        sd(["daemon", "stop"], home=home)


def _frame(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_frames(data: bytes):
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        n = int(head.split(b":")[1])
        out.append(json.loads(rest[:n]))
        data = rest[n:]
    return out


def test_stdio_answers_everything_before_eof(home, workdir):
    reqs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "id": 2, "method": "daemon/ping", "params": {"delay": 0.3}},
            {"jsonrpc": "2.0", "id": 3, "method": "session/open", "params": {"working_dir": str(workdir)}},
            {"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {}},
            {"jsonrpc": "2.0", "id": 5, "method": "daemon/ping", "params": {"delay": 0.2}}]
    p = subprocess.run(CLI + ["serve", "--stdio", "--state-dir", str(home)], input=b"".join(map(_frame, reqs)),
                       capture_output=True, env=env_for(home), timeout=120)
    assert p.returncode == 0, p.stderr
    answers = {m["id"]: m for m in _read_frames(p.stdout)}
    assert sorted(answers) == [1, 2, 3, 4, 5], p.stdout
    assert all("result" in m for m in answers.values()), answers
    assert answers[3]["result"]["working_dir"] == str(workdir)  # requests run concurrently: no order asserted


@pytest.mark.parametrize("args,words", [
    (["serve", "--stdio"], "stdout is a file"),
    (["serve", "--tcp", "0.0.0.0:0"], "loopback only"),
    (["serve", "--tcp", "nonsense"], "HOST:PORT"),
])
def test_serve_setup_errors_are_one_clean_line(home, tmp_path, args, words):
    out = tmp_path / "out.txt"
    with open(out, "wb") as f:
        p = subprocess.run(CLI + args + ["--state-dir", str(home)], stdin=subprocess.DEVNULL, stdout=f,
                           stderr=subprocess.PIPE, env=env_for(home), timeout=60)
    err = p.stderr.decode()
    assert p.returncode in (2, 3) and words in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "Warning" not in err, err
    assert out.read_bytes() == b""
