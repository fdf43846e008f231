"""A new session's last step, the rename of its laid-out directory into place, refused by the kernel
for a reason other than "that name exists": the caller gets a typed storage error naming it, not
`SessionExistsError` (which `open_session(None)` would then turn into a resume of no id and a
misleading `InvalidSessionIdError`).

The fault is real: the child process restricts itself with Landlock so that no directory may be
removed or renamed (LANDLOCK_ACCESS_FS_REMOVE_DIR handled, granted nowhere); everything else, the
session's files included, is written as usual, so only the final rename fails (EACCES)."""

import json
import subprocess
import sys

import pytest

from sessiondag.workspace import sandbox_exec

CHILD = r"""
import ctypes, errno, json, os, sys
from sessiondag.store import SessionStore
from sessiondag.workspace import sandbox_exec as lk

store = SessionStore(sys.argv[1])
FS_REMOVE_DIR = 1 << 4
attr = lk._Ruleset(FS_REMOVE_DIR, 0)
rfd = lk._sys(ctypes.c_long(lk.SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
if lk._libc.prctl(lk.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
    raise OSError(ctypes.get_errno(), "prctl")
lk._sys(ctypes.c_long(lk.SYS_RESTRICT_SELF), ctypes.c_long(rfd), ctypes.c_uint32(0))
try:
    getattr(store, sys.argv[2])(None, working_dir=sys.argv[3])
except Exception as e:
    print(json.dumps({"type": type(e).__name__, "code": getattr(e, "code", None),
                      "errno": getattr(e, "errno", None), "message": str(e)}))
else:
    print(json.dumps({"type": None}))
"""


def _create_under_landlock(tmp_path, method):
    assert sandbox_exec.abi() >= 1, "this test needs a kernel with Landlock (see /work/shared/FACTS.md)"
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    r = subprocess.run([sys.executable, "-c", CHILD, str(state), method, str(work)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), state


@pytest.mark.process   # a child process (tests/tiers.py)
def test_open_session_without_id_reports_a_refused_rename_as_a_storage_error(tmp_path):
    got, state = _create_under_landlock(tmp_path, "open_session")
    assert got["type"] == "StorageError" and got["code"] == "storage_error", got
    assert got["errno"] == 13, got  # EACCES, kept for the caller
    assert not [n for n in (state / "sessions").iterdir() if not n.name.startswith(".")]  # nothing created


@pytest.mark.process   # a child process (tests/tiers.py)
def test_start_session_reports_a_refused_rename_as_a_storage_error_not_exists(tmp_path):
    got, _ = _create_under_landlock(tmp_path, "start_session")
    assert got["type"] == "StorageError" and got["errno"] == 13, got
