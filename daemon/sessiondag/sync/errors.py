"""Typed errors of sync: each names what the caller can act on; none leaves anything changed."""

from __future__ import annotations

from ..core.errors import SessionDagError


class SyncError(SessionDagError):
    code = "sync_error"

    def __init__(self, message: str, **data: object):
        super().__init__(message)
        self._data = data

    def data(self) -> dict[str, object]:
        return dict(self._data)


class RemoteUnreachableError(SyncError):
    """The remote could not be reached or is not a git repository (network, DNS, no such path)."""
    code = "sync_unreachable"


class RemoteStalledError(RemoteUnreachableError):
    """The remote stopped sending for longer than the transfer's idle limit (`data.reason`:
    "timeout"); nothing it sent is kept."""


class RemoteAuthError(SyncError):
    """The remote refused our credentials (HTTP 401/403, ssh authentication)."""
    code = "sync_auth_failed"


class UnknownRemoteError(SyncError):
    code = "sync_unknown_remote"


class NonFastForwardError(SyncError):
    """The remote holds commits of this session that the local one lacks: pull first (never forced)."""
    code = "sync_non_fast_forward"


class RemoteRejectedError(SyncError):
    """The server refused a ref update (a hook, permissions, a race with another pusher)."""
    code = "sync_rejected"


class SyncConflictError(SyncError):
    """A node id present on both sides with different content: nothing merged, nothing changed."""
    code = "sync_conflict"


class SecretInSessionError(SyncError):
    """A value that looks like a credential would leave with the push (node and field named)."""
    code = "secret_in_session"


class ObjectTooLargeError(SyncError):
    """An object over `sync.max_object_bytes` would be pushed (the node that holds it named)."""
    code = "sync_object_too_large"


class RemoteDataError(SyncError):
    """What the remote sent does not hold up (bad refs, unreadable snapshot, invalid nodes)."""
    code = "sync_bad_remote_data"


class RemoteTooMuchError(RemoteDataError):
    """The remote sent more than one transfer may receive (`data.reason`: "too_much", `data.limit`);
    nothing it sent is kept."""


class NotOnRemoteError(SyncError):
    code = "sync_not_on_remote"


SYNC_ERROR_CLASSES: dict[str, type[SyncError]] = {cls.code: cls for cls in (
    SyncError, RemoteUnreachableError, RemoteAuthError, UnknownRemoteError, NonFastForwardError,
    RemoteRejectedError, SyncConflictError, SecretInSessionError, ObjectTooLargeError, RemoteDataError,
    NotOnRemoteError)}
