"""A session directory holds plain files and directories only, and nobody else's permissions.

A session restored from a tar or a clone, or planted by another local user, may hold a symlink
where the store expects a file (`lock`, `journal.log`, `git/objects/pack`, `running`, …): every
open would follow it and write wherever it points. Before a session is read or rebuilt, its whole
tree (`git/` included: dulwich opens and writes there) is walked without following anything
(scandir's file types, no stat per entry); a symlink or a special file (FIFO, socket, device) is
refused as `corrupt`, naming the entry. Files the store opens by name are opened with O_NOFOLLOW
besides (journal_lock.NOFOLLOW), so an entry swapped for a link after the check fails to open.

Modes: a session directory is created 0700 and its files 0600 whatever the umask; dulwich creates
the repository's directories with the umask's mode, so `restrict` sets 0700 on every directory
(and clears group/other bits on every file) of a new repository, and a fan directory made for a
loose object gets 0700 too (gitstore.py).
"""

from __future__ import annotations

import errno
import os
import stat

from ..core.errors import SessionResumeError

MAX_DEPTH = 8          # git/objects/pack/… and refs/heads/<name>/…: deeper is not a session's


def check_tree(session_path: str, session_id: str) -> None:
    """Raise SessionResumeError(corrupt) naming the first entry that is not a plain file or
    directory (the session directory itself included)."""
    try:
        st = os.lstat(session_path)
    except FileNotFoundError:
        raise SessionResumeError(session_id, "missing") from None
    if not stat.S_ISDIR(st.st_mode):
        raise SessionResumeError(session_id, "corrupt", "the session directory is a symlink or not a directory")
    todo = [(session_path, 0)]
    while todo:
        path, depth = todo.pop()
        with os.scandir(path) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if depth >= MAX_DEPTH:
                        raise SessionResumeError(session_id, "corrupt", f"{_rel(e.path, session_path)} nests too deep")
                    todo.append((e.path, depth + 1))
                elif not e.is_file(follow_symlinks=False):
                    what = "a symlink" if e.is_symlink() else "not a regular file or directory"
                    raise SessionResumeError(session_id, "corrupt", f"{_rel(e.path, session_path)} is {what}")


def _rel(path: str, top: str) -> str:
    return os.path.relpath(path, top)


def restrict(top: str) -> None:
    """Directories under `top` (itself included) 0700, files without group/other bits: a tree this
    process just created, whatever the umask made of it (nothing in it is followed)."""
    os.chmod(top, 0o700, follow_symlinks=False)
    for path, dirs, files in os.walk(top):
        for d in dirs:
            os.chmod(os.path.join(path, d), 0o700, follow_symlinks=False)
        for f in files:
            p = os.path.join(path, f)
            mode = os.lstat(p).st_mode
            if stat.S_ISREG(mode) and mode & 0o077:
                os.chmod(p, stat.S_IMODE(mode) & 0o700)


def read_small_file(path: str, limit: int = 1 << 20) -> bytes:
    """A small file's bytes (session.json), never through a symlink or from a FIFO or device."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.read(fd, limit)
    finally:
        os.close(fd)


def make_state_dir(state_dir: str) -> None:
    """`<state>/sessions`, the state dir made 0700 if this creates it (whatever the umask; a
    state dir that exists keeps its mode: the daemon warns when others may write it)."""
    if not os.path.isdir(state_dir):
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        os.chmod(state_dir, 0o700)
    sessions = os.path.join(state_dir, "sessions")
    if not os.path.isdir(sessions):
        os.makedirs(sessions, mode=0o700, exist_ok=True)
        os.chmod(sessions, 0o700)


def loose_permissions(state_dir: str) -> list[str]:
    """The state dir and its sessions dir, where group or others may write them (for a warning)."""
    out = []
    for path in (state_dir, os.path.join(state_dir, "sessions")):
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if mode & 0o022:
            out.append(f"{path} is mode {stat.S_IMODE(mode):04o}")
    return out
