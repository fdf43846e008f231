"""A spilled body (store/spill.py) or an attachment stored in a session's repository as a loose git
object, durably: the object file fsync'd (dulwich's `fsync_object_files`), then its fan directory,
and the objects directory when the fan is new. Journal records name these bodies by id, so each is
durable before the record that names it is written. packs.maintain packs them once there are many.
"""

from __future__ import annotations

import os
from dulwich.file import FileLocked
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob

from .durable_files import fsync_dir


def put_loose(store: DiskObjectStore, data: bytes) -> tuple[str, bool]:
    """(its git blob id, whether it was written now) of `data` stored in the dulwich object store
    `store`. Idempotent: a body already stored (loose or packed) is not written again. Caller holds
    the session lock."""
    blob = Blob.from_string(data)
    if blob.id in store:
        return blob.id.decode(), False
    fan = os.path.join(store.path, blob.id[:2].decode())
    new_fan = not os.path.isdir(fan)
    lock = os.path.join(fan, blob.id[2:].decode() + ".lock")
    try:
        try:
            store.add_object(blob)
        except FileLocked:  # a writer killed while writing this very body left its lock file
            os.unlink(lock)
            store.add_object(blob)
    except OSError:  # no space, read-only …: leave no half-written lock file behind
        try:
            os.unlink(lock)
        except OSError:
            pass
        raise
    if new_fan:
        os.chmod(fan, 0o700)  # dulwich's mkdir: the umask's mode
    fsync_dir(fan)
    if new_fan:
        fsync_dir(os.fspath(store.path))
    return blob.id.decode(), True
