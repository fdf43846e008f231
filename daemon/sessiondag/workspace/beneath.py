"""Beneath: the one way the project opens anything under a working dir, never following a symlink.

Why: resolving a path (realpath) and then opening it is a race. Whoever can write in the working dir
(a prompt-injected agent's own command, another local user, a cloned repo's build step) can swap a
directory on the way for a symlink between the check and the open. Here every open walks from a
directory fd held on the root and refuses any symlink at every component, so no swap can lead out.

How: `openat2(root_fd, path, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` (Linux
5.6+, through ctypes, syscall 437) where the kernel has it; elsewhere (an older kernel, a seccomp
filter answering ENOSYS/EPERM) a component-by-component `openat(dirfd, name, O_NOFOLLOW)` walk that
gives the same guarantee. `Beneath(root, resolver="walk")` forces the walk: whoever builds a Beneath
passes the setting `workspace.beneath` (auto|openat2|walk; $SESSIONDAG_BENEATH is one of its sources,
for tests of a whole daemon and for kernels that misbehave). Nothing here reads the environment.

Use (all paths are relative to the root, `str` or `bytes`; `str` is encoded with os.fsencode, so a
name that came back from `listdir` as bytes or as a surrogate-escaped str opens the same file):

    with Beneath(working_dir) as b:              # holds one fd on the root; close() or `with`
        data = b.read_bytes("src/main.py", limit=256 * 1024)   # bytes (at most limit + 1)
        b.write_bytes("out/report.txt", b"...")  # atomic: temp file + rename; parents created
        b.write_bytes("log.txt", b"...", atomic=False)         # in place (same inode)
        for e in b.listdir("src"): e.name, e.kind              # bytes, "file"|"dir"|"symlink"|...
        for rel, e in b.walk(".", skip={b".git"}): ...         # rel: bytes path of e, no symlink followed
        for d in b.scan("."): d.entries; d.enter.append(name)  # listings with lstat, for a snapshot
        st = b.lstat("a/b")                       # os.stat_result of the entry itself
        b.mkdir("a/b", parents=True); b.unlink("a/b/c"); b.rmdir("a/b"); b.rename("x", "y/z")
        b.symlink(b"../target", "a/link")         # a link as recorded (workspace/restore.py)
        with b.open_read("big.bin") as f: ...     # a binary file object on a checked regular file
        b.read_bytes(b.through_links("docs/link"))  # follow symlinks only where they stay inside

Rules every call applies (a refusal is `PathRefusedError` with `reason`, see core/errors.py):
- `absolute`, `dot_dot`, `not_a_path` (empty, NUL byte): refused before any syscall. `.` components
  and repeated slashes are dropped; `"."` is the root itself.
- `symlink`: a symlink anywhere on the path, the last component included (read, write, listdir,
  mkdir parents); `lstat`, `unlink` and `rename` act on a last-component symlink itself, as their
  POSIX meaning says, but never follow one on the way.
- `not_regular`: read/write open only regular files; FIFOs, sockets and devices are refused without
  blocking (the open is O_NONBLOCK, then fstat), directories too.
- `hard_link`: a regular file with st_nlink > 1 is refused for writes always, and for reads unless
  `Beneath(root, allow_hard_link_reads=True)` (setting `agent.read_hard_links`): its other names may
  be outside the root.
- `race`: openat2 kept answering EAGAIN (the tree was being renamed under it).
- `too_many`: walk() met more than max_entries entries or max_depth levels.
Missing paths raise FileNotFoundError (message: the path as given), other OS errors pass through.

Names for people: `shown(name_bytes)` is an encodable, lossless str (UTF-8 text as is; a byte that
is not UTF-8 or a control character as `\\xNN`, a backslash as `\\\\`); `unshown()` inverts it. Show
names with `shown` in anything that goes to JSON or a terminal, and keep the raw bytes alongside
where a program needs them.

Thread safety: calls on one Beneath may run from several threads; close() must not race them.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Generator, Iterable, Iterator

from ..core.errors import PathRefusedError

from .beneath_walk import DIR_FLAGS, MAX_WALK_DEPTH, MAX_WALK_ENTRIES, entries, through_links, walk
from .names import Entry, kind_of, label, shown, split, unshown
from .openat2 import O_PATH, openat2, openat2_available
from .beneath_scan import Listing, scan as _scan

__all__ = ["Beneath", "Entry", "PathRefusedError", "openat2_available", "shown", "split", "unshown"]

_DIR = DIR_FLAGS


class Beneath:
    """A working dir, opened once; every operation stays beneath it (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str], *, resolver: str = "auto",
                 allow_hard_link_reads: bool = False):
        if resolver not in ("auto", "openat2", "walk"):
            raise ValueError(f"resolver must be auto, openat2 or walk, not {resolver!r}")
        self.use_openat2 = resolver == "openat2" or (resolver == "auto" and openat2_available())
        self.allow_hard_link_reads = allow_hard_link_reads
        self.root = os.fspath(root)
        self.fd = os.open(self.root, _DIR & ~os.O_NOFOLLOW)   # the root itself is trusted as bound

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __enter__(self) -> "Beneath":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- resolution -------------------------------------------------------------------------------

    def _refuse_for(self, path: str | bytes, err: OSError, parts: list[bytes]) -> BaseException:
        shown_path = label(path)
        if err.errno == errno.ELOOP:
            return PathRefusedError(shown_path, "a symlink is on the way (symlinks are not followed)", "symlink")
        if err.errno == errno.EXDEV:
            return PathRefusedError(shown_path, "it leads outside the working dir", "outside")
        if err.errno == errno.EAGAIN:
            return PathRefusedError(shown_path, "the tree kept changing while it was opened", "race")
        if err.errno in (errno.ENXIO, errno.ENODEV):     # a FIFO without reader, a socket, a device
            return PathRefusedError(shown_path, "it is a FIFO, socket or device, not a regular file", "not_regular")
        if err.errno == errno.ENOENT:
            return FileNotFoundError(errno.ENOENT, f"{shown_path}: no such file or directory")
        if err.errno == errno.ENOTDIR and self._symlink_on_way(parts):
            return PathRefusedError(shown_path, "a symlink is on the way (symlinks are not followed)", "symlink")
        return err

    def _symlink_on_way(self, parts: list[bytes]) -> bool:
        """After ENOTDIR from the walk: was it a symlink (refused) rather than a plain file?"""
        fd = os.dup(self.fd)
        try:
            for name in parts:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    return True
                if not stat.S_ISDIR(st.st_mode):
                    return False
                nfd = os.open(name, O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except OSError:
            return False
        finally:
            os.close(fd)
        return False

    def _open_parts(self, parts: list[bytes], flags: int, mode: int = 0o666) -> int:
        """An fd on root/parts, opened with `flags`, no symlink followed on the way or at the end."""
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC
        if not parts:
            return os.open(".", flags & ~(os.O_CREAT | os.O_NOFOLLOW), dir_fd=self.fd)
        if self.use_openat2:
            return openat2(self.fd, b"/".join(parts), flags, mode)
        fd = self.fd
        try:
            for name in parts[:-1]:
                nfd = os.open(name, O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                if fd != self.fd:
                    os.close(fd)
                fd = nfd
            return os.open(parts[-1], flags, mode, dir_fd=fd)
        finally:
            if fd != self.fd:
                os.close(fd)

    def _open(self, path: str | bytes, flags: int, mode: int = 0o666) -> int:
        parts = split(path)
        try:
            return self._open_parts(parts, flags, mode)
        except OSError as e:
            raise self._refuse_for(path, e, parts) from None

    def _parent(self, path: str | bytes, *, make: bool = False) -> tuple[int, bytes]:
        """(an fd on the parent directory, the last name) for an operation on the entry itself."""
        parts = split(path)
        if not parts:
            raise PathRefusedError(".", "the working dir itself cannot be the target", "not_a_path")
        if make and len(parts) > 1:
            self._makedirs(parts[:-1], path)
        try:
            return self._open_parts(parts[:-1], _DIR), parts[-1]
        except OSError as e:
            raise self._refuse_for(path, e, parts[:-1]) from None

    def _makedirs(self, parts: list[bytes], path: str | bytes) -> None:
        for i in range(1, len(parts) + 1):
            try:
                pfd = self._open_parts(parts[:i - 1], _DIR)
            except OSError as e:
                raise self._refuse_for(path, e, parts[:i - 1]) from None
            try:
                os.mkdir(parts[i - 1], 0o777, dir_fd=pfd)
            except FileExistsError:
                pass        # a dir (checked by the next open) or something refused there
            finally:
                os.close(pfd)

    # -- files ------------------------------------------------------------------------------------

    def _checked(self, fd: int, path: str | bytes, *, writing: bool) -> os.stat_result:
        st = os.fstat(fd)
        shown_path = label(path)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise PathRefusedError(shown_path, f"it is a {kind_of(st.st_mode)}, not a regular file", "not_regular")
        if st.st_nlink > 1 and (writing or not self.allow_hard_link_reads):
            os.close(fd)
            raise PathRefusedError(shown_path, f"it has {st.st_nlink} hard links (its other names may be outside "
                                   "the working dir)", "hard_link")
        return st

    def open_read(self, path: str | bytes) -> BinaryIO:
        """A binary file object on a regular file (see the rules); the caller closes it."""
        fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        self._checked(fd, path, writing=False)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")

    def read_bytes(self, path: str | bytes, limit: int | None = None) -> bytes:
        """The file's bytes; with `limit`, at most limit + 1 (so the caller can tell it was cut)."""
        with self.open_read(path) as f:
            return f.read() if limit is None else f.read(limit + 1)

    def write_bytes(self, path: str | bytes, data: bytes, *, atomic: bool = True, parents: bool = True,
                    mode: int = 0o666, fsync: bool = False) -> None:
        """Create or replace a regular file. atomic: write a temp file beside it, then rename over (an
        existing file keeps its permission bits); else truncate and write in place. `mode` is for a
        new file (the umask applies). parents: create missing directories, never through a symlink."""
        if not atomic:
            fd = self._open(self._made_parents(path, parents), os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK
                            | os.O_NOCTTY, mode)
            self._checked(fd, path, writing=True)
            try:
                os.set_blocking(fd, True)
                os.ftruncate(fd, 0)
                _write_all(fd, data, fsync)
            finally:
                os.close(fd)
            return
        pfd, name = self._parent(path, make=parents)
        try:
            keep = self._existing_mode(pfd, name, path)
            tmp = b".%s.sd-%s.tmp" % (name[:200], os.urandom(6).hex().encode())
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                         dir_fd=pfd)
            try:
                if keep is not None:
                    os.fchmod(fd, keep)
                _write_all(fd, data, fsync)
            except BaseException:
                os.close(fd)
                os.unlink(tmp, dir_fd=pfd)
                raise
            os.close(fd)
            try:
                os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            except BaseException:
                os.unlink(tmp, dir_fd=pfd)
                raise
            if fsync:
                os.fsync(pfd)
        finally:
            os.close(pfd)

    def _made_parents(self, path: str | bytes, parents: bool) -> str | bytes:
        if parents:
            os.close(self._parent(path, make=True)[0])
        return path

    def _existing_mode(self, pfd: int, name: bytes, path: str | bytes) -> int | None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=pfd)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise self._refuse_for(path, e, []) from None
        st = self._checked(fd, path, writing=True)
        os.close(fd)
        return stat.S_IMODE(st.st_mode) & 0o777

    # -- directories and entries ------------------------------------------------------------------

    def listdir(self, path: str | bytes = ".") -> list[Entry]:
        """The entries of a directory, sorted by name (bytes); kinds from the entries, not followed."""
        fd = self._open(path, _DIR)
        try:
            return entries(fd)
        finally:
            os.close(fd)

    def walk(self, path: str | bytes = ".", *, skip: set[bytes] | frozenset[bytes] = frozenset(),
             max_entries: int = MAX_WALK_ENTRIES, max_depth: int = MAX_WALK_DEPTH) -> Iterator[tuple[bytes, Entry]]:
        """Every entry under `path`, bounded, no symlink entered (beneath_walk.py `walk`)."""
        return walk(self, path, skip=skip, max_entries=max_entries, max_depth=max_depth)

    def through_links(self, path: str | bytes, *, max_links: int = 40) -> bytes:
        """`path` with its symlinks resolved while they stay inside (beneath_walk.py `through_links`)."""
        return through_links(self, path, max_links=max_links)

    def lstat(self, path: str | bytes) -> os.stat_result:
        """The entry itself (a last-component symlink is stat'ed, not followed); the root for '.'."""
        if not split(path):
            return os.fstat(self.fd)
        pfd, name = self._parent(path)
        try:
            return os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, f"{label(path)}: no such file or directory") from None
        finally:
            os.close(pfd)

    def exists(self, path: str | bytes) -> bool:
        try:
            self.lstat(path)
            return True
        except (FileNotFoundError, NotADirectoryError):
            return False

    def mkdir(self, path: str | bytes, *, parents: bool = False, exist_ok: bool = False) -> None:
        pfd, name = self._parent(path, make=parents)
        try:
            os.mkdir(name, 0o777, dir_fd=pfd)
        except FileExistsError:
            if not exist_ok or not stat.S_ISDIR(os.stat(name, dir_fd=pfd, follow_symlinks=False).st_mode):
                raise
        finally:
            os.close(pfd)

    def unlink(self, path: str | bytes) -> None:
        pfd, name = self._parent(path)
        try:
            os.unlink(name, dir_fd=pfd)
        finally:
            os.close(pfd)

    def rmdir(self, path: str | bytes) -> None:
        pfd, name = self._parent(path)
        try:
            os.rmdir(name, dir_fd=pfd)
        finally:
            os.close(pfd)

    def rename(self, src: str | bytes, dst: str | bytes, *, parents: bool = False) -> None:
        """Move an entry within the root (a symlink moves as itself); replaces a file at dst."""
        sfd, sname = self._parent(src)
        try:
            dfd, dname = self._parent(dst, make=parents)
            try:
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def symlink(self, target: str | bytes, path: str | bytes, *, parents: bool = False) -> None:
        """Create a symlink at `path` (its parents never through a symlink) pointing at `target`,
        which is stored as given and never resolved here (a restore of a recorded link)."""
        pfd, name = self._parent(path, make=parents)
        try:
            os.symlink(target, name, dir_fd=pfd)
        finally:
            os.close(pfd)


    def scan(self, path: str | bytes = ".", *, names: Iterable[bytes] | None = None) -> Generator[Listing, None, None]:
        """Directory listings under `path` with each entry's lstat, for a walker that reads as it
        goes and picks the subdirectories to enter (beneath_scan.py; workspace/snapshot.py).
        `names`: the first listing holds only these entries of `path`. Unbounded: the caller
        stops when it wants (its time budget)."""
        fd = self._open(path, _DIR)
        try:
            yield from _scan(fd, b"/".join(split(path)), names)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes, fsync: bool) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if fsync:
        os.fsync(fd)
