"""The Python client's discovery rules against the language-neutral table every client is checked
against (tests/fixtures/discovery.json; the TypeScript and Lua suites read the same file), and the
daemon's own rules (rpc/transports.py) against the same table."""

import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from sessiondag_client import discovery
from waiting import wait_until

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "discovery.json")
TABLE = json.load(open(FIXTURE, encoding="utf-8"))
ENV_VARS = ("SESSIONDAG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "SESSIONDAG_CONFIG", "XDG_CONFIG_HOME")


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="sdfx-", dir="/tmp")   # short: the short-address cases count its bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


def fill(value, tmp):
    if isinstance(value, str):
        return value.replace("{tmp}", tmp).replace("{uid}", str(os.getuid()))
    if isinstance(value, dict):
        return {fill(k, tmp): fill(v, tmp) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, tmp) for v in value]
    return value


class Pids:
    """$alive, $dead and $zombie pids, made by this process."""

    def __init__(self):
        self.procs = []

    def make(self, kind):
        if kind == "$alive":
            return os.getpid()
        if kind == "$dead":
            p = subprocess.Popen(["true"])
            p.wait()
            return p.pid
        if kind == "$zombie":   # sh's child exits once sh has become sleep (sh could reap it), so nobody reaps it
            script = 'p=$$; (until read c < /proc/$p/comm && [ "$c" = sleep ]; do :; done) & echo $!; exec sleep 60'
            p = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            pid = int(p.stdout.readline())
            wait_until(lambda: open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", "the zombie")
            return pid
        return kind

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()


def set_up(case, tmp, monkeypatch, pids):
    case = fill(case, tmp)
    monkeypatch.chdir(tmp)
    for k in ENV_VARS:
        monkeypatch.delenv(k, raising=False)
    for k, v in case.get("env", {}).items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)
    for d in case.get("mkdir", []):
        os.makedirs(d, exist_ok=True)
    for link, target in case.get("symlinks", {}).items():
        os.symlink(target, link)
    for path, text in case.get("files", {}).items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    sd = discovery.state_dir_of(case.get("explicit"))
    if "pidfile" in case or "pidfile_raw" in case:
        raw = case.get("pidfile_raw")
        if raw is None:
            pf = dict(case["pidfile"])
            pf["pid"] = pids.make(pf["pid"])
            raw = json.dumps(pf)
        with open(os.path.join(sd, "daemon.pid"), "w") as f:
            f.write(raw)
    return case, sd


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_client_discovery(case, tmp, monkeypatch):
    pids = Pids()
    try:
        case, sd = set_up(case, tmp, monkeypatch, pids)
        want = case["expect"]
        assert sd == want["state_dir"]
        got = {"runtime_dir": discovery.runtime_dir(), "socket": discovery.socket_for(sd),
               "log": discovery.log_path(sd), "pidfile": os.path.join(sd, discovery.PIDFILE)}
        for k in ("runtime_dir", "socket", "log", "pidfile"):
            if k in want:
                assert got[k] == want[k], k
        if want.get("default_socket"):
            assert got["socket"] == discovery.default_socket_path(sd)
        if "same_socket_as" in want:
            assert got["socket"] == discovery.default_socket_path(want["same_socket_as"])
        if "pid_alive" in want:
            assert discovery.pid_alive(json.load(open(got["pidfile"]))["pid"]) is want["pid_alive"]
    finally:
        pids.close()


@pytest.mark.parametrize("case", [c for c in TABLE["cases"] if "pidfile" not in c and "pidfile_raw" not in c],
                         ids=lambda c: c["name"])
def test_the_daemon_listens_where_the_table_says(case, tmp, monkeypatch):
    """The daemon's own defaults (rpc/transports.py) are the table's, so a client finds it."""
    from sessiondag.rpc import transports
    case, sd = set_up(case, tmp, monkeypatch, Pids())
    want = case["expect"]
    if "runtime_dir" in want:
        assert transports.runtime_dir() == want["runtime_dir"]
    if "socket" in want:
        assert transports.default_socket_path(sd) == want["socket"]
    if "same_socket_as" in want:
        assert transports.default_socket_path(sd) == transports.default_socket_path(want["same_socket_as"])
    if want.get("daemon_refuses_config"):   # the daemon reads the same file and refuses it, naming why
        from sessiondag.core.errors import ConfigError
        from sessiondag.core.settings_source import SettingsSource
        with pytest.raises(ConfigError, match=r"store\.state_dir.*SESSIONDAG_HOME.*--state-dir"):
            SettingsSource(environ=dict(os.environ))()
    elif "explicit" not in case:   # (an explicit one is the daemon's --state-dir)
        from sessiondag.core.settings_source import SettingsSource
        assert SettingsSource(environ=dict(os.environ))().state_dir == sd   # the daemon's state dir is the client's


def socket_path(case, tmp):
    """{tmp}/D/file, D made here and padded so that the path has exactly total_bytes bytes."""
    base, file = tmp.encode() + b"/", b"/" + case["file"].encode()
    unit = case["dir_fill"].encode()
    room = case["total_bytes"] - len(base) - len(file)
    d = unit * (room // len(unit))
    d += b"x" * (room - len(d))
    os.makedirs(base + d)
    path = (base + d + file).decode()
    assert len(path.encode()) == case["total_bytes"]
    return path


@pytest.mark.parametrize("case", TABLE["short_address"], ids=[c["name"] for c in TABLE["short_address"]])
def test_short_address(case, tmp):
    from sessiondag.rpc import transports
    path = socket_path(case, tmp)
    for short_address in (discovery.short_address, transports.short_address):   # the client's and the daemon's
        if case["address"] == "error":
            with pytest.raises(Exception, match="too long"):
                with short_address(path):
                    pass
            continue
        with short_address(path) as addr:
            if case["address"] == "direct":
                assert addr == path
            else:
                assert re.fullmatch(r"/proc/self/fd/\d+/" + re.escape(case["file"]), addr), addr
                assert os.path.samefile(os.path.dirname(addr), os.path.dirname(path))
