"""Typed errors. Every error a caller can act on has its own class and a stable `code`.

The `code` strings are the wire names used by rpc/ (see rpc_schema/); `data()` is the structured
payload that travels with them.
"""

from __future__ import annotations


class SessionDagError(Exception):
    code = "sessiondag_error"

    def data(self) -> dict[str, object]:
        return {}


class InvalidNodeError(SessionDagError, ValueError):
    """A node (or an update) that the model refuses: unknown role/status, bad field, bad transition."""

    code = "invalid_node"


class PredecessorMissingError(InvalidNodeError):
    """A ROOT-level conversational node was appended without a predecessor."""

    code = "predecessor_missing"

    def __init__(self, role: str, name: str):
        super().__init__(
            f"ROOT-level {role} node {name!r} has no predecessor; pass the current head "
            f"(or predecessor='ROOT' for a first node or an explicit root fork)"
        )
        self.role = role
        self.name = name

    def data(self) -> dict[str, object]:
        return {"role": self.role, "name": self.name}


class BrokenPredecessorChainError(SessionDagError):
    """A branch walk met a node whose predecessor edge is missing or dangling."""

    code = "broken_predecessor_chain"

    def __init__(self, node_id: str, detail: str = ""):
        super().__init__(f"broken predecessor chain at node {node_id!r}" + (f": {detail}" if detail else ""))
        self.node_id = node_id

    def data(self) -> dict[str, object]:
        return {"node_id": self.node_id}


class NotFoundError(SessionDagError, KeyError):
    code = "not_found"

    def __init__(self, what: str, ident: str):
        super().__init__(f"{what} {ident!r} not found")
        self.what = what
        self.ident = ident

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])

    def data(self) -> dict[str, object]:
        return {"what": self.what, "id": self.ident}


class HeadMismatchError(SessionDagError):
    """A compare-and-set append found a different head than the caller expected."""

    code = "head_mismatch"

    def __init__(self, expected: str, actual: str):
        super().__init__(f"expected head {expected!r} but the head is {actual!r}")
        self.expected = expected
        self.actual = actual

    def data(self) -> dict[str, object]:
        return {"expected": self.expected, "actual": self.actual}


class InvalidSessionIdError(SessionDagError, ValueError):
    code = "invalid_session_id"

    def __init__(self, session_id: object, why: str):
        super().__init__(f"invalid session id {session_id!r}: {why}")
        self.session_id = session_id
        self.why = why

    def data(self) -> dict[str, object]:
        return {"session_id": repr(self.session_id), "why": self.why}


class SessionExistsError(SessionDagError):
    code = "session_exists"

    def __init__(self, session_id: str):
        super().__init__(
            f"session {session_id!r} already exists: resume it (resume_session) to continue "
            f"or reset it (reset_session) to discard it"
        )
        self.session_id = session_id

    def data(self) -> dict[str, object]:
        return {"session_id": self.session_id}


RESUME_REASONS = ("missing", "corrupt", "schema_mismatch", "working_dir_mismatch")


class SessionResumeError(SessionDagError):
    """A session could not be resumed. `reason` is one of RESUME_REASONS.

    `should_clear_handle` tells a caller holding a handle whether the handle is spent (the session
    is gone or unreadable) or still good (a working-dir mismatch: the session is fine, just not here).
    """

    code = "session_resume"

    def __init__(self, session_id: str, reason: str, detail: str = ""):
        if reason not in RESUME_REASONS:
            raise ValueError(f"unknown resume reason {reason!r}")
        super().__init__(f"cannot resume session {session_id!r}: {reason}" + (f" ({detail})" if detail else ""))
        self.session_id = session_id
        self.reason = reason
        self.detail = detail

    @property
    def should_clear_handle(self) -> bool:
        return self.reason != "working_dir_mismatch"

    def data(self) -> dict[str, object]:
        return {
            "session_id": self.session_id,
            "reason": self.reason,
            "should_clear_handle": self.should_clear_handle,
            "detail": self.detail,
        }


class WorkingDirUnboundError(SessionDagError):
    """The session's working dir is gone (deleted or moved); turns cannot start until it is back."""

    code = "working_dir_unbound"

    def __init__(self, session_id: str, working_dir: str | None):
        super().__init__(f"session {session_id!r} is unbound: working dir {working_dir!r} is missing")
        self.session_id = session_id
        self.working_dir = working_dir

    def data(self) -> dict[str, object]:
        return {"session_id": self.session_id, "working_dir": self.working_dir}


class StorageError(SessionDagError):
    """The filesystem refused a write or a read (read-only, I/O error, out of descriptors …).

    Nothing was recorded: the session is as it was before the call, and the call can be retried
    once the cause is gone. `errno` is the operating system's error number."""

    code = "storage_error"

    def __init__(self, message: str, errno_: int | None = None, path: str | None = None):
        super().__init__(message)
        self.errno = errno_
        self.path = path

    def data(self) -> dict[str, object]:
        import errno as _errno

        name = _errno.errorcode.get(self.errno) if self.errno is not None else None
        return {"errno": self.errno, "errno_name": name, "path": self.path}


class StorageFullError(StorageError):
    """No space left (ENOSPC) or quota exceeded (EDQUOT): nothing was recorded; retry once space is back."""

    code = "storage_full"


class SessionClosedError(StorageError):
    """The session was closed (its store closed, or the store let go of it): a late writer — a
    thread that outlived the call that started it — stops here and nothing is written. Load the
    session again (SessionStore.session) to go on. Sent as a storage error (nothing was recorded)."""

    def __init__(self, session_id: str):
        super().__init__(f"session {session_id!r} is closed: nothing more is written through this object")
        self.session_id = session_id


def storage_error_from(exc: OSError, what: str = "storage") -> StorageError:
    """The typed error for an OSError raised while reading or writing a session."""
    import errno as _errno

    cls = StorageFullError if exc.errno in (_errno.ENOSPC, _errno.EDQUOT) else StorageError
    path = exc.filename if isinstance(exc.filename, str) else None
    reason = exc.strerror or str(exc) or type(exc).__name__
    return cls(f"{what} failed: {reason}" + (f" ({path})" if path else ""), exc.errno, path)


class ConfigError(SessionDagError, ValueError):
    """A setting holds a value it does not accept. Never ignored: the caller learns where it was set
    (`variable`: the SESSIONDAG_… variable, `<config file>: section.key`, or the flag), what it holds
    and what it takes (docs/settings.md)."""

    code = "config_error"

    def __init__(self, variable: str, value: str, expected: str):
        super().__init__(f"{variable}={value!r} is not valid: expected {expected}")
        self.variable = variable
        self.value = value
        self.expected = expected

    def data(self) -> dict[str, object]:
        return {"variable": self.variable, "value": self.value, "expected": self.expected}


class SessionDeletedError(SessionDagError):
    """The session's directory was deleted while it was open: nothing more is written to it."""

    code = "session_deleted"

    def __init__(self, session_id: str, detail: str = ""):
        super().__init__(f"session {session_id!r} was deleted" + (f" ({detail})" if detail else ""))
        self.session_id = session_id
        self.detail = detail

    def data(self) -> dict[str, object]:
        return {"session_id": self.session_id, "detail": self.detail}


class SessionBusyError(SessionDagError):
    """A reset/delete was refused: another process (a daemon, a CLI run) has the session open."""

    code = "session_busy"

    def __init__(self, session_id: str, holders: list[int] | None = None, where: str = ""):
        who = where or (f"process {', '.join(map(str, holders))}" if holders else "another process")
        super().__init__(f"session {session_id!r} is open in {who}; reset it there "
                         f"(through the daemon: session/reset) or close it first")
        self.session_id = session_id
        self.holders = list(holders or [])
        self.where = where

    def data(self) -> dict[str, object]:
        return {"session_id": self.session_id, "holders": self.holders, "where": self.where}


class McpServerError(SessionDagError):
    """An MCP server of the session could not be used: it did not start (`reason` start_failed:
    the command is missing, exited, or the handshake failed), is not installed support (`reason`
    unavailable: the `mcp` package), or kept crashing (`reason` crashed). `detail` says what it said."""

    code = "mcp_server_failed"

    def __init__(self, server: str, reason: str, detail: str = "", origin: str = ""):
        super().__init__(f"MCP server {server!r} ({origin or 'configured'}): {reason}"
                         + (f": {detail}" if detail else ""))
        self.server = server
        self.reason = reason
        self.detail = detail
        self.origin = origin

    def data(self) -> dict[str, object]:
        return {"server": self.server, "reason": self.reason, "detail": self.detail, "origin": self.origin}


class InvalidCursorError(SessionDagError):
    """A paging cursor that names no node, or a node that is not on the paged branch."""

    code = "invalid_cursor"

    def __init__(self, cursor: str, why: str):
        super().__init__(f"invalid cursor {cursor!r}: {why}")
        self.cursor = cursor
        self.why = why

    def data(self) -> dict[str, object]:
        return {"cursor": self.cursor, "why": self.why}


class PathRefusedError(SessionDagError, ValueError):
    """A path under a working dir that is refused: it would leave the dir (`..`, absolute, a symlink on
    the way), or it names something the tools do not touch (a hard-linked file, a FIFO, a device).
    `reason` is one of REASONS (stable, for callers and tests); `why` the sentence for people."""

    code = "path_refused"
    REASONS = ("not_a_path", "absolute", "dot_dot", "symlink", "outside", "hard_link", "not_regular",
               "race", "too_many")

    def __init__(self, path: str, why: str, reason: str = "outside"):
        super().__init__(f"path {path!r} refused: {why}")
        self.path = path
        self.why = why
        self.reason = reason

    def data(self) -> dict[str, object]:
        return {"path": self.path, "why": self.why, "reason": self.reason}


class ReplayRefusedError(SessionDagError):
    """A recorded model call that cannot be replayed exactly (not an llm node, no manifest, a manifest
    of another render policy version, an edit that names no message); `reason` says which."""

    code = "replay_refused"

    def __init__(self, node_id: str, reason: str, message: str):
        super().__init__(f"cannot replay {node_id}: {message}")
        self.node_id = node_id
        self.reason = reason

    def data(self) -> dict[str, object]:
        return {"node_id": self.node_id, "reason": self.reason}


class WorkspaceDirtyError(SessionDagError):
    """A restore was refused: files changed since the last snapshot (`paths`); pass force to go on
    (the restore's undo point keeps them)."""

    code = "workspace_dirty"

    def __init__(self, session_id: str, paths: list[str]):
        shown = ", ".join(paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")
        super().__init__(f"session {session_id!r}: files changed since the last snapshot: {shown}")
        self.session_id = session_id
        self.paths = list(paths)

    def data(self) -> dict[str, object]:
        return {"session_id": self.session_id, "paths": self.paths}


class TurnRunningError(SessionDagError):
    """Refused while a turn of the session runs (in this process or another)."""

    code = "turn_running"

    def __init__(self, session_id: str, what: str = "restore"):
        super().__init__(f"session {session_id!r} has a turn running; {what} when it has ended")
        self.session_id = session_id

    def data(self) -> dict[str, object]:
        return {"session_id": self.session_id}


class NoCheckpointError(SessionDagError):
    """The node has no workspace snapshot (its turn is open, or was recorded without checkpoints)."""

    code = "no_checkpoint"

    def __init__(self, node_id: str, why: str):
        super().__init__(f"no workspace snapshot for node {node_id!r}: {why}")
        self.node_id = node_id
        self.why = why

    def data(self) -> dict[str, object]:
        return {"node_id": self.node_id, "why": self.why}


ERROR_CLASSES: dict[str, type[SessionDagError]] = {
    cls.code: cls
    for cls in (
        InvalidNodeError, PredecessorMissingError, BrokenPredecessorChainError, NotFoundError,
        HeadMismatchError, InvalidSessionIdError, SessionExistsError, SessionResumeError,
        WorkingDirUnboundError, StorageError, StorageFullError, ConfigError,
        SessionDeletedError, SessionBusyError, InvalidCursorError, ReplayRefusedError, WorkspaceDirtyError,
        TurnRunningError, NoCheckpointError, McpServerError,
    )
}
