"""openat2(2) through ctypes (Linux 5.6+; syscall 437 on every architecture): open a path beneath a
directory fd with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, so that the kernel
refuses any symlink on the way (ELOOP) and any way out (EXDEV). Used by beneath.py only."""

from __future__ import annotations

import ctypes
import errno
import os
import sys

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
SYS_OPENAT2 = 437            # the same number on every Linux architecture (added after the unification)
EAGAIN_TRIES = 16
O_PATH = getattr(os, "O_PATH", os.O_RDONLY)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_openat2_ok: bool | None = None     # probed once: None = not yet


def openat2(dirfd: int, path: bytes, flags: int, mode: int) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, RESOLVE)
    for _ in range(EAGAIN_TRIES):
        fd: int = _libc.syscall(ctypes.c_long(SYS_OPENAT2), ctypes.c_long(dirfd), ctypes.c_char_p(path),
                           ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err != errno.EAGAIN:
            raise OSError(err, os.strerror(err))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def openat2_available() -> bool:
    """Whether this kernel (and any seccomp filter in front of it) lets us use openat2."""
    global _openat2_ok
    if _openat2_ok is None and not sys.platform.startswith("linux"):
        _openat2_ok = False   # 437 is openat2 on Linux only
    if _openat2_ok is None:
        root = os.open("/", O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.close(openat2(root, b".", O_PATH | os.O_DIRECTORY, 0))
            _openat2_ok = True
        except OSError:
            _openat2_ok = False
        finally:
            os.close(root)
    return _openat2_ok


