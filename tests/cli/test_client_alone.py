"""The Python client works without the daemon package (installed alone from clients/python), and its
discovery rules are the daemon's own."""

import json
import os
import subprocess
import sys
import zipfile

from clitest_support import env_for, sd

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CLIENT_DIR = os.path.abspath(os.path.join(ROOT, "clients", "python"))

ALONE = r"""
import sys
tried = []
class NoDaemon:                           # the daemon package is not importable here, and no import tries it
    def find_spec(self, name, path=None, target=None):
        if name == "sessiondag" or name.startswith("sessiondag."):
            tried.append(name)
            raise ImportError(f"{name} is not installed")
sys.meta_path.insert(0, NoDaemon())
sys.path.insert(0, CLIENT_DIR)
import json
from sessiondag_client import SyncClient, DaemonNotRunningError
from sessiondag_client.wire.types import Call, SessionHandle
assert Call.__module__ == "sessiondag_client.wire.types"
try:
    SyncClient.connect(state_dir=MISSING)
except DaemonNotRunningError as e:
    missing = str(e)
with SyncClient.connect(state_dir=HOME) as c:           # found through HOME/daemon.pid
    h = c.open(working_dir=WORK)
    assert isinstance(h, SessionHandle)
    node, head = c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
    branch = c.get_branch(h.id)
    try:
        c.get_node(h.id, "no-such-node")
    except Exception as e:
        err = type(e).__name__
    print(json.dumps({"missing": missing, "node": node.output, "head": head, "branch": [b.id for b in branch],
                      "err": err, "pid": c.status()["pid"], "tried": tried}))
"""


def test_client_without_the_daemon_package(home, workdir, tmp_path):
    info = json.loads(sd(["daemon", "start", "--json"], home=home).stdout)
    code = ALONE.replace("CLIENT_DIR", repr(CLIENT_DIR)).replace("MISSING", repr(str(tmp_path / "none"))) \
        .replace("HOME", repr(str(home))).replace("WORK", repr(str(workdir)))
    other_rt = tmp_path / "rt2"
    other_rt.mkdir(mode=0o700)
    env = env_for(home, XDG_RUNTIME_DIR=other_rt)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["pid"] == info["pid"] and out["node"] == "hi" and out["branch"][-1] == out["head"]
    assert "sessiondag daemon start" in out["missing"] and out["err"] == "NotFoundError"
    assert out["tried"] == []  # not even a conditional import of the daemon package


def test_discovery_rules_match_the_daemon(tmp_path, monkeypatch):
    from sessiondag.rpc import transports
    from sessiondag.store import handles
    from sessiondag_client import discovery
    for env in ({"SESSIONDAG_HOME": str(tmp_path / "h")}, {"SESSIONDAG_HOME": "", "XDG_STATE_HOME": str(tmp_path)},
                {"SESSIONDAG_HOME": "", "XDG_STATE_HOME": ""}):
        for k, v in env.items():
            monkeypatch.setenv(k, v) if v else monkeypatch.delenv(k, raising=False)
        assert discovery.default_state_dir() == handles.default_state_dir()
        sd_ = discovery.default_state_dir()
        assert discovery.default_socket_path(sd_) == transports.default_socket_path(sd_)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "not-there"))
    assert discovery.runtime_dir() == transports.runtime_dir()


def test_client_wheel_holds_the_client_alone(tmp_path):
    out = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), CLIENT_DIR],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (wheel,) = out.glob("sessiondag_client-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert all(n.startswith(("sessiondag_client/", "sessiondag_client-")) for n in names), names
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist")]
    assert any("anyio" in x for x in requires) and not any("sessiondag" in x for x in requires)


def test_client_alone_knows_every_typed_error_kind():
    code = ("import sys, json; sys.modules['sessiondag'] = None; sys.path.insert(0, %r); "
            "from sessiondag_client.wire.errors import ERROR_CLASSES; "
            "print(json.dumps({k: c.rpc_code for k, c in ERROR_CLASSES.items()}))" % CLIENT_DIR)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    wire = json.loads(r.stdout)
    from sessiondag.core.errors import ERROR_CLASSES
    from sessiondag.rpc import schema
    assert set(ERROR_CLASSES) <= set(wire)  # every typed error of the daemon has its class in the client
    declared = {name: e["code"] for name, e in schema.load()["errors"].items()}
    assert {k: wire[k] for k in declared if k in wire} == {k: c for k, c in declared.items() if k in wire}
