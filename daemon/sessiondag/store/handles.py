"""Session handles: open / start / resume / reset / list, with typed resume failures.

A caller keeps only a `SessionHandle`; the transcript stays in the store. Resume failures raise
`SessionResumeError` with a `reason` (missing | corrupt | schema_mismatch | working_dir_mismatch) and
`should_clear_handle`. A failed resume never writes anything.
"""

from __future__ import annotations

import atexit
import errno
import functools
import os
import shutil
import weakref
import threading
import time
import uuid
from typing import Any, Callable

import orjson

from ..core.errors import SessionDagError, SessionExistsError, SessionResumeError, storage_error_from
from ..core.ids import check_session_id, mint_session_id
from ..core.model import make_root
from ..core.settings import Settings
from ..core.settings_source import current as process_settings
from .durable_files import fsync_dir, write_file_atomic
from .gitstore import GitSnapshots
from .journal import Journal
from .layout import make_state_dir
from .listing import SessionRow, is_session_name, readable_row, unreadable_row
from .presence import OpenMark, exclusive
from .rebind import moved_away, rebind as rebind_to
from .recovery import finalize_interrupted
from .session_handle import SessionHandle, Usage
from .session import JOURNAL_NAME, SCHEMA_VERSION, CommitHook, Session, is_journal_path
from .checkpoints import SnapshotSource
from .session_load import load_session, read_info


def default_state_dir(settings: Settings | None = None) -> str:
    """The setting store.state_dir: $SESSIONDAG_HOME, else $XDG_STATE_HOME/sessiondag, else
    ~/.local/state/sessiondag (core/settings.py; never the config file's: clients find the daemon by
    the environment alone). Without `settings`, the process's resolved now."""
    return (settings or process_settings()).state_dir


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _norm_dir(path: str | os.PathLike[str] | None) -> str | None:
    return None if path is None else os.path.realpath(os.fspath(path))


def _reset_here(store_ref: "weakref.ref[SessionStore]", sid: str, ref: "weakref.ref[Session]") -> None:
    """Another store of this process is resetting the session: let go of it, tell listeners."""
    store, s = store_ref(), ref()
    if store is not None and s is not None and store.release(sid, s):
        s.announce_deleted()


class SessionStore:
    """All sessions under one state directory. Sessions are cached: one `Session` per id.

    `commit_hooks` (store/session.py `CommitHook`) run at every `commit_turn` of every session this
    store loads; a bare store has none (no aging boundary advance: see docs/architecture.md).
    `settings`: the frozen Settings an entry point resolved once (what `open_store` passes;
    default: the process's, resolved once here, core/settings_source.py). The store and its
    sessions keep that object: `settings()` returns it, and nothing they do reads the config file
    or the environment again. Applications build their store with
    `sessiondag.context.store_factory.open_store`, which also installs the commit hooks."""

    def __init__(self, state_dir: str | os.PathLike[str] | None = None, *,
                 commit_hooks: "tuple[CommitHook, ...] | list[CommitHook]" = (),
                 settings: Settings | None = None,
                 snapshots: "SnapshotSource | None" = None):
        if settings is not None and not isinstance(settings, Settings):
            raise TypeError("SessionStore(settings=) takes a Settings (resolved once), not a source")
        frozen = settings if settings is not None else process_settings()
        self.settings: Callable[[], Settings] = lambda: frozen
        self.snapshots = snapshots   # workspace checkpoints of every session it loads (store/checkpoints.py)
        self.state_dir = os.path.abspath(os.fspath(state_dir)) if state_dir else default_state_dir(frozen)
        self.sessions_dir = os.path.join(self.state_dir, "sessions")
        make_state_dir(self.state_dir)
        self._open: dict[str, Session] = {}
        self.commit_hooks: list[CommitHook] = list(commit_hooks)  # shared with every loaded Session
        self._marks: dict[str, OpenMark] = {}   # the shared open lock of each loaded session
        self._leftovers: set[str] = set()       # temp dirs a failed creation could not remove yet
        self._sweep_dead_temps()
        self._mutex = threading.Lock()
        ref = weakref.ref(self)
        atexit.register(lambda: (lambda s: s.close() if s is not None else None)(ref()))

    def set_snapshots(self, snapshots: "SnapshotSource | None") -> None:
        """Install the workspace checkpoints of this store's sessions, loaded or not."""
        with self._mutex:
            self.snapshots = snapshots
            for s in self._open.values():
                s.snapshots = snapshots

    def add_commit_hook(self, hook: CommitHook) -> None:
        """Install `hook` on this store's sessions, loaded or not (once: adding it again is a no-op)."""
        with self._mutex:
            if hook not in self.commit_hooks:
                self.commit_hooks.append(hook)

    def path_of(self, session_id: str) -> str:
        return os.path.join(self.sessions_dir, check_session_id(session_id))

    def exists(self, session_id: str) -> bool:
        return os.path.isdir(self.path_of(session_id))

    # --- lifecycle ---------------------------------------------------------------------------
    def open_session(self, session_id: str | None = None, *, working_dir: str | os.PathLike[str] | None,
                     allow_working_dir_mismatch: bool = False, rebind: bool = False) -> SessionHandle:
        """id given: resume it, or create it under that id if missing. None: a new session."""
        if session_id is not None and self.exists(session_id):
            return self.resume_session(session_id, working_dir=working_dir,
                                       allow_working_dir_mismatch=allow_working_dir_mismatch, rebind=rebind)
        try:
            return self.start_session(session_id, working_dir=working_dir)
        except SessionExistsError:  # another process created it a moment ago
            return self.resume_session(check_session_id(session_id), working_dir=working_dir,
                                       allow_working_dir_mismatch=allow_working_dir_mismatch, rebind=rebind)

    def start_session(self, session_id: str | None = None, *,
                      working_dir: str | os.PathLike[str] | None) -> SessionHandle:
        """Create a new session; refuses an id that already exists."""
        sid = mint_session_id() if session_id is None else check_session_id(session_id)
        final = self.path_of(sid)
        if os.path.exists(final):
            raise SessionExistsError(sid)
        wd = _norm_dir(working_dir)
        tmp = os.path.join(self.sessions_dir, f".new-{sid}-{os.getpid()}-{threading.get_ident()}")
        self._remove_leftovers()
        try:
            _lay_out(tmp, sid, wd)
        except BaseException:  # a failed creation (EMFILE, ENOSPC …) leaves nothing behind
            self._remove(tmp)
            raise
        try:
            os.rename(tmp, final)  # atomic: a racing creator loses cleanly
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):  # only these mean "another creator won"
                raise SessionExistsError(sid) from None
            raise storage_error_from(e, f"creating session {sid!r}") from e
        fsync_dir(self.sessions_dir)  # the new session's name survives a power loss too
        return self.handle(self._load(sid))

    def resume_session(self, session_id: str, *, working_dir: str | os.PathLike[str] | None = None,
                       allow_working_dir_mismatch: bool = False, rebind: bool = False) -> SessionHandle:
        """`rebind` (with allow_working_dir_mismatch): move the session to `working_dir`, recorded,
        even while its recorded dir exists (`sessiondag run --allow-working-dir-mismatch`)."""
        sid = check_session_id(session_id)
        info = self._read_info(sid)
        # load first: a damaged session is `corrupt` (spent handle) from any working dir
        s = self._load(sid, recover=False)
        recorded = info.get("working_dir")
        wanted = _norm_dir(working_dir)
        if not allow_working_dir_mismatch:
            if recorded is None:
                raise SessionResumeError(sid, "working_dir_mismatch",
                                         "the session recorded no working dir; resume needs explicit opt-in")
            if wanted != recorded:
                raise SessionResumeError(sid, "working_dir_mismatch", f"recorded {recorded!r}, asked {wanted!r}")
        finalize_interrupted(s)
        if wanted is not None and (moved_away(recorded, wanted) or (rebind and wanted != recorded)):
            rebind_to(s, wanted)  # opted in, and the recorded dir is gone (or a move asked for): recorded
        return self.handle(s)

    def reset_session(self, session_id: str) -> bool:
        """Drop a session and everything in it. Returns False if there was nothing to drop.

        Refused with SessionBusyError while another process (or another store) has it open."""
        sid = check_session_id(session_id)
        path = self.path_of(sid)
        loaded = self.loaded_session(sid)
        self.release(sid)
        if not os.path.isdir(path):
            return False
        trash = os.path.join(self.sessions_dir, f".trash-{sid}-{os.getpid()}-{threading.get_ident()}")
        try:
            with exclusive(path, sid, self.state_dir):
                os.rename(path, trash)
        except FileNotFoundError:  # reset by someone else meanwhile
            return False
        shutil.rmtree(trash, ignore_errors=True)
        if loaded is not None:
            loaded.announce_deleted()
        return True

    def check_not_open_elsewhere(self, session_id: str) -> None:
        """Raise SessionBusyError if another process (or another store) has the session open — what
        reset_session would refuse, asked before a caller prompts a person (reset checks again)."""
        sid = check_session_id(session_id)
        path = self.path_of(sid)
        self.release(sid)
        if os.path.isdir(path):
            try:
                with exclusive(path, sid, self.state_dir, take=False):
                    pass
            except FileNotFoundError:
                pass

    def release(self, session_id: str, session: Session | None = None) -> bool:
        """Close a loaded session (its fds, its open lock) and forget it; the next access loads it
        again from disk. With `session`, only if that object is still the loaded one."""
        with self._mutex:
            s = self._open.get(session_id)
            if s is None or (session is not None and s is not session):
                return False
            del self._open[session_id]
            mark = self._marks.pop(session_id, None)
        s.close()
        if mark is not None:
            mark.close()
        return True

    def loaded(self) -> int:
        return len(self._open)

    def loaded_session(self, session_id: str) -> Session | None:
        """The Session object loaded for this id now (None: not loaded; `session()` would load it)."""
        with self._mutex:
            return self._open.get(session_id)

    def session_id_at(self, path: str) -> str | None:
        """The id of the session whose directory is `path` (a session dir's entry in sessions_dir)."""
        parent, name = os.path.split(os.path.normpath(path))
        return name if parent == self.sessions_dir and not name.startswith(".") else None

    def last_write(self, session_id: str) -> float:
        """When the session was last written (newest mtime of its journal, info and git refs; 0.0
        if none can be read)."""
        path = self.path_of(session_id)
        newest = 0.0
        for rel in (JOURNAL_NAME, "session.json", os.path.join("git", "refs", "heads"), os.path.join("git", "HEAD")):
            try:
                newest = max(newest, os.stat(os.path.join(path, rel)).st_mtime)
            except OSError:
                pass
        return newest

    def journal_session(self, path: str) -> str | None:
        """The id of the session whose journal is `path` (what watchers of other processes' writes
        look for), else None."""
        return self.session_id_at(os.path.dirname(path)) if is_journal_path(path) else None

    def list_sessions(self, working_dir: str | os.PathLike[str] | None = None) -> list[SessionRow]:
        """A row per session (store/listing.py): an unreadable one only without `working_dir` (it
        is nobody's), a session.json that does not hold up an unreadable row, never a crash."""
        wanted = _norm_dir(working_dir)
        out: list[SessionRow] = []
        for name in sorted(os.listdir(self.sessions_dir)):
            if name.startswith(".") or not is_session_name(name):
                continue
            try:
                info = self._read_info(name, check=False)  # a listing reads session.json alone
            except SessionDagError as e:
                if wanted is None:
                    out.append(unreadable_row(name, e))
                continue
            if wanted is None or info.get("working_dir") == wanted:
                out.append(readable_row(name, info, self.last_write(name)))
        return out

    # --- access ------------------------------------------------------------------------------
    def session(self, session_id: str) -> Session:
        """The loaded session (no working-dir check: reads, renders and listing work anywhere)."""
        sid = check_session_id(session_id)
        with self._mutex:
            s = self._open.get(sid)
        if s is not None:
            return s
        self._read_info(sid)
        return self._load(sid)

    def handle(self, s: Session) -> SessionHandle:
        total, delta = s.usage()
        return SessionHandle(s.id, s.path, s.info.get("working_dir"), s.schema_version,
                             s.graph.head_id, Usage(*delta), Usage(*total))

    def close(self) -> None:
        self._remove_leftovers()
        with self._mutex:
            sessions, self._open = list(self._open.values()), {}
            marks, self._marks = list(self._marks.values()), {}
        for s in sessions:
            s.close()
        for m in marks:
            m.close()

    # --- internals ---------------------------------------------------------------------------
    def _remove(self, path: str) -> None:
        """Remove a temp dir; if that fails now (no fds left), remember it and retry later."""
        shutil.rmtree(path, ignore_errors=True)
        if os.path.lexists(path):
            self._leftovers.add(path)

    def _remove_leftovers(self) -> None:
        for path in list(self._leftovers):
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.lexists(path):
                self._leftovers.discard(path)

    def _sweep_dead_temps(self) -> None:
        """`.new-<sid>-<pid>-…` / `.trash-<sid>-<pid>-…` left by a process that died midway."""
        try:
            names = os.listdir(self.sessions_dir)
        except OSError:
            return
        for name in names:
            if not (name.startswith(".new-") or name.startswith(".trash-")):
                continue
            parts = name.rsplit("-", 2)
            if len(parts) == 3 and parts[1].isdigit() and not _alive(int(parts[1])):
                shutil.rmtree(os.path.join(self.sessions_dir, name), ignore_errors=True)

    def _read_info(self, sid: str, check: bool = True) -> dict[str, Any]:
        return read_info(self.path_of(sid), sid, check)

    def _load(self, sid: str, recover: bool = True) -> Session:
        with self._mutex:
            s = self._open.get(sid)
            if s is not None:
                return s
            mark = OpenMark(self.path_of(sid), sid)
            try:
                s = load_session(self.path_of(sid), sid, self.commit_hooks, self.settings, self.snapshots)
            except BaseException:
                mark.close()
                raise
            self._open[sid] = s
            self._marks[sid] = mark
            # weak both ways: the mark must not keep this store (and so the session and its lock)
            # alive once the caller drops it, or the lock lingers until the cyclic GC runs
            mark.on_reset = functools.partial(_reset_here, weakref.ref(self), sid, weakref.ref(s))
        if recover:
            finalize_interrupted(s)  # running nodes of a writer that is gone become `error` (interrupted)
        return s


def _lay_out(path: str, session_id: str, working_dir: str | None) -> None:
    """Lay out a new session directory at `path` (which must not exist yet): the git repository,
    a journal holding ROOT, and session.json."""
    os.makedirs(path, mode=0o700)
    now = time.time()
    info = {"session_id": session_id, "schema_version": SCHEMA_VERSION,
            "working_dir": working_dir, "created_at": now}
    GitSnapshots.init(os.path.join(path, "git"))
    j = Journal(os.path.join(path, JOURNAL_NAME), os.path.join(path, "lock"))
    try:
        j.create(uuid.uuid4().hex, session_id, SCHEMA_VERSION, [{"a": make_root(now).to_dict()}])
    finally:
        j.close()
    write_file_atomic(os.path.join(path, "session.json"), orjson.dumps(info, option=orjson.OPT_INDENT_2))
