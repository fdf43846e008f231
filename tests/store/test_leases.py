"""Who owns a running node: the lease names its writer; a lease of a process that is gone (or of
another boot) is dead, one from another pid namespace cannot be checked and counts as alive."""

import os
import subprocess
import sys

import pytest

from sessiondag.store.recovery import lease_path, owner_alive, take_leases, writer_identity

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


def _write(path, node, text):
    os.makedirs(os.path.dirname(lease_path(path, node)), exist_ok=True)
    with open(lease_path(path, node), "w") as f:
        f.write(text)


def test_lease_owners(tmp_path):
    path = str(tmp_path)
    take_leases(path, ["mine"])
    assert owner_alive(path, "mine")
    pid, start, boot, ns = writer_identity().split()
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = child.stdout.strip()  # a process that has exited
    _write(path, "dead", f"{dead} 1 {boot} {ns}")
    _write(path, "reused", f"{pid} {int(start) + 1} {boot} {ns}")  # same pid, another start: reused
    _write(path, "old-boot", f"{pid} {start} another-boot {ns}")
    _write(path, "container", f"{dead} 1 {boot} 4026531000")
    _write(path, "garbage", "not a lease")
    assert not owner_alive(path, "dead")
    assert not owner_alive(path, "reused")
    assert not owner_alive(path, "old-boot")
    assert owner_alive(path, "container")
    assert not owner_alive(path, "garbage")
    assert not owner_alive(path, "never-leased")
