"""Run a command under Landlock: `python -m sessiondag.workspace.sandbox_exec MODE WD TMP NET -- argv...`

A separate process (so nothing runs between fork and exec in the threaded daemon): it restricts
itself with Landlock (ctypes; Linux 5.13+, ABI >= 1), then execs argv. Reads and execution stay
allowed everywhere; writes (create, remove, rename, truncate, write) only beneath WD and TMP for MODE
`workspace-write`, only beneath TMP for `read-only` (and to /dev/null, /dev/tty for both). With
Landlock ABI >= 4 and NET `0`, TCP bind and connect are refused. Exits 126 with a message on stderr
when Landlock cannot be applied (the caller then falls back or refuses).
"""

from __future__ import annotations

import ctypes
import os
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_WRITES_V1 = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | \
    (1 << 11) | (1 << 12)
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1


class _Ruleset(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _sys(*args: object) -> int:
    r: int = _libc.syscall(*args)
    if r < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return r


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when there is none."""
    try:
        return _sys(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0


def restrict(mode: str, wd: str, tmp: str, net: bool) -> int:
    """Restrict this process (and what it execs) as the module docstring says; returns the ABI used."""
    v = abi()
    if v < 1:
        raise OSError("Landlock is not available in this kernel")
    writes = FS_WRITES_V1 | (FS_REFER if v >= 2 else 0) | (FS_TRUNCATE if v >= 3 else 0)
    attr = _Ruleset(writes, 0 if net or v < 4 else NET_BIND_TCP | NET_CONNECT_TCP)
    size = ctypes.sizeof(_Ruleset) if v >= 4 else 8
    rfd = _sys(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    dirs = [tmp] + ([wd] if mode == "workspace-write" else [])
    files = [p for p in ("/dev/null", "/dev/tty") if os.path.exists(p)]
    for path, rights in [(d, writes) for d in dirs] + [(f, FS_WRITE_FILE | (FS_TRUNCATE if v >= 3 else 0))
                                                        for f in files]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = _PathBeneath(rights, fd)
            _sys(ctypes.c_long(SYS_ADD_RULE), ctypes.c_long(rfd), ctypes.c_long(RULE_PATH_BENEATH),
                 ctypes.byref(rule), ctypes.c_uint32(0))
        finally:
            os.close(fd)
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    _sys(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_long(rfd), ctypes.c_uint32(0))
    os.close(rfd)
    return v


def main(argv: list[str]) -> None:
    mode, wd, tmp, net, sep, *cmd = argv
    if sep != "--" or mode not in ("workspace-write", "read-only") or not cmd:
        sys.stderr.write("usage: sandbox_exec MODE WD TMP NET -- argv...\n")
        os._exit(2)
    try:
        restrict(mode, wd, tmp, net == "1")
    except OSError as e:
        sys.stderr.write(f"sessiondag sandbox: cannot apply Landlock: {e}\n")
        os._exit(126)
    os.environ["TMPDIR"] = tmp
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
