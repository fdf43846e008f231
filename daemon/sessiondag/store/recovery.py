"""Nodes left `running` by a writer that died: who owns a running node, and finalizing orphans.

A process that appends a `running` node first writes a small lease file for it,
`<session>/running/<sha1 of the node id>`, naming the writer: pid, the process's start time (from
/proc), the boot id and its pid namespace (a writer in another namespace — a container sharing the
state directory — cannot be checked by pid and is taken as alive). The lease is written under the session lock *before* the node is journaled
and removed once the node reaches a terminal status. A running node is orphaned when its lease is
missing or names a process that no longer exists (pid gone, or reused by a process that started at
another time, or another boot). No descriptor is held per node, so any number of running nodes
costs no file descriptors, and a SIGKILL, a crash or a power loss all leave a lease whose owner is
gone. (The lease is not fsync'd: after a power loss every owner is dead anyway.)

When a session is opened, its orphaned running nodes are finalized like a failed turn: status
`error`, `metadata.error = {"type": "interrupted", …}`, and the change is committed as a turn, so
the history has no node that stays `running` forever and the next prompt can retry from it (an
ordinary fork from the interrupted turn's predecessor, see runtime `retry_point`).
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import ContextManager, Iterable, Protocol

from ..core.errors import SessionDagError
from ..core.graph import Graph

log = logging.getLogger(__name__)

LEASE_DIR = "running"
INTERRUPTED = "interrupted"
_me: tuple[int, str] | None = None


def _start_time(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot), or None if there is no such process
    or it has ended (a zombie: only its parent's wait is missing, e.g. a killed `sessiondag run`'s
    daemon child until init reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after the last ')'
    fields = raw[raw.rfind(b")") + 2:].split()
    if len(fields) <= 19 or fields[0] in (b"Z", b"X"):   # field 3: the state
        return None
    return fields[19].decode()


_boot: list[str] = []  # this boot's id, read once: a process never outlives its boot


def _boot_id() -> str:
    """This boot's id ("-" where it cannot be read), read once per process (every turn commit asks)."""
    if not _boot:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                _boot.append(f.read().strip())
        except OSError:
            _boot.append("-")
    return _boot[0]


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def writer_identity() -> str:
    """This process as a lease names it: 'pid start-time boot-id pid-namespace' (recomputed after
    a fork)."""
    global _me
    pid = os.getpid()
    if _me is None or _me[0] != pid:
        _me = (pid, f"{pid} {_start_time(pid) or '-'} {_boot_id()} {_pid_namespace()}")
    return _me[1]


def lease_path(session_path: str, node_id: str) -> str:
    return os.path.join(session_path, LEASE_DIR, _lease_name(node_id))


def _lease_name(node_id: str) -> str:
    return hashlib.sha1(node_id.encode()).hexdigest()


def _lease_dir(session_path: str, create: bool) -> int:
    """A descriptor of `<session>/running`, never through a symlink planted there (ELOOP/ENOTDIR):
    lease files are then opened relative to it, O_NOFOLLOW too."""
    path = os.path.join(session_path, LEASE_DIR)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        return os.open(path, flags)


def take_leases(session_path: str, node_ids: Iterable[str]) -> None:
    """Before journaling running nodes (caller holds the session lock): name this process their owner."""
    ident = writer_identity().encode()
    node_ids = list(node_ids)
    if not node_ids:
        return
    dfd = _lease_dir(session_path, create=True)
    try:
        for nid in node_ids:
            fd = os.open(_lease_name(nid), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=dfd)
            try:
                os.write(fd, ident)
            finally:
                os.close(fd)
    finally:
        os.close(dfd)


def drop_lease(session_path: str, node_id: str) -> None:
    try:
        dfd = _lease_dir(session_path, create=False)
        try:
            os.unlink(_lease_name(node_id), dir_fd=dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # already gone, or the filesystem refuses: a lease of a terminal node is ignored


def owner_alive(session_path: str, node_id: str) -> bool:
    """True if the process that leased `node_id` still runs (this one included)."""
    try:
        dfd = _lease_dir(session_path, create=False)
        try:
            fd = os.open(_lease_name(node_id), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        finally:
            os.close(dfd)
        with os.fdopen(fd, "rb") as f:
            parts = f.read(256).decode(errors="replace").split()
    except OSError:
        return False
    if len(parts) not in (3, 4) or not parts[0].isdigit():
        return False
    pid, start, boot = int(parts[0]), parts[1], parts[2]
    if boot != _boot_id():
        return False  # the machine restarted since: every writer of then is gone
    if len(parts) == 4 and parts[3] != _pid_namespace():
        return True  # a process in another pid namespace (a container): its pid is not ours to check
    return _start_time(pid) == start


def interrupted_metadata() -> dict[str, object]:
    return {"error": {"type": INTERRUPTED,
                      "message": "the process running this node ended before it finished (killed or crashed)",
                      "trace": ""}}


class Recovering(Protocol):
    """What finalizing uses of the Session being opened (naming store/session.py's class: an import
    cycle)."""

    @property
    def id(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def lock(self) -> ContextManager[object]: ...

    @property
    def graph(self) -> Graph: ...

    def update(self, node_id: str, *, status: str | None = None,
               metadata: dict[str, object] | None = None) -> object: ...

    def commit_turn(self, message: str | None = None) -> str | None: ...


def finalize_interrupted(session: Recovering) -> list[str]:
    """Finalize the running nodes whose writer is gone and commit that as a turn. Returns their ids.

    Called when a session is opened. Best effort on a filesystem that refuses writes (read-only,
    full): the nodes stay running and the next open tries again."""
    with session.lock:
        g = session.graph
        orphans = [c.id for c in g.nodes.values()
                   if c.status == "running" and not owner_alive(session.path, c.id)]
        if not orphans:
            return []
        done = []
        try:
            for nid in sorted(orphans, key=lambda i: -g.nodes[i].seq):  # callees before their callers
                session.update(nid, status="error", metadata=interrupted_metadata())
                drop_lease(session.path, nid)
                done.append(nid)
            session.commit_turn(f"interrupted: {len(done)} running node(s) of a writer that is gone "
                                f"finalized as error\n")
        except SessionDagError as e:
            log.warning("session %s: could not finalize interrupted nodes: %s", session.id, e)
        return done
