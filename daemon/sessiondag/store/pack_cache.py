"""What a session's writer keeps in memory between sync points, so that its commits read nothing
back from the packs it wrote itself (store/gitstore.py's commits, store/packs.py's merges).

- `volatile`: the packs (paths without extension) this process wrote unsynced since the last sync
  point (store/snapshot_sync.py); only they merge on the commit path.
- `kept`: what packs.add_pack recorded of each of them (size, entries by offset, and the bytes of
  the small ones): a merge of kept packs copies their records from memory, or from one read of a
  big one's file, with no stat, listing or index read (packs are immutable).
- the chunks of the open 64-turn bucket this process wrote, by blob id, for the commit that folds
  them into one (a closing commit), up to KEPT_CHUNK_BYTES.

- `loose_added`: a body may have been stored loose since maintenance last looked.

The packs are forgotten at the sync point; everything is forgotten when a commit's parent is not
this process's last commit (`forget`): another process committed, and only a process that committed
can have merged our packs away (its sync point follows its commit). So while the parent is ours the
kept packs are still there as kept, and their merge needs no stat to say so (packs.maintain).
Forgetting a pack only stops its merge on the commit path: the sync point syncs and merges every pack.
(Were a kept pack gone all the same — a `git gc` run by hand — its merge from memory would still
write every object it held: a duplicate, never a loss; a big one's missing file stops the merge and
forgets the packs it would have merged.)
"""

from __future__ import annotations

import os
from typing import Sequence

from dulwich.object_store import DiskObjectStore

from . import packs
from .pack_format import Record

KEPT_CHUNK_BYTES = 4 << 20  # the open bucket's chunks kept in memory for its closing merge


class PackCache:
    def __init__(self) -> None:
        self.volatile: set[str] = set()
        self.kept: packs.Kept = {}
        self._chunks: dict[bytes, bytes] = {}  # chunk blob id -> bytes
        self._chunk_bytes = 0
        self.loose_added = True

    def add_pack(self, store: DiskObjectStore, records: Sequence[Record], level: int, deferred: bool) -> None:
        """Write one pack (packs.add_pack): unsynced and remembered if `deferred`, else durable."""
        name = packs.add_pack(store, records, level, not deferred, self.kept if deferred else None)
        if deferred:
            self.wrote_pack(store.pack_dir, name)

    def maintain(self, store: DiskObjectStore, git_dir: str, level: int, deferred: bool) -> bool:
        """packs.maintain after a commit: only our unsynced packs if `deferred` (None: every pack,
        synced); loose bodies looked at only if one was stored since. False: reopen the repository."""
        looked, self.loose_added = self.loose_added, False
        if deferred:
            return packs.maintain(store, git_dir, level, self.volatile, looked, self.kept)
        return packs.maintain(store, git_dir, level, None, looked, None)

    def wrote_pack(self, pack_dir: str | os.PathLike[str], checksum: bytes) -> None:
        """A pack this process wrote unsynced (named by its checksum)."""
        self.volatile.add(os.path.join(pack_dir, "pack-" + checksum.hex()))

    def synced(self) -> None:
        """The sync point: every pack is durable, none is ours to merge unsynced any more."""
        self.volatile.clear()
        self.kept.clear()

    def forget(self) -> None:
        """Another base commit: neither our packs nor the bucket's chunks are known any more."""
        self.synced()
        self.drop_chunks()

    def chunk(self, blob_id: bytes) -> bytes | None:
        """The bytes of a chunk of the open bucket this process wrote, if kept."""
        return self._chunks.get(blob_id)

    def keep_chunk(self, blob_id: bytes, data: bytes) -> None:
        """Keep a chunk just written (blobs are named by their content) while the bucket's fit."""
        if blob_id not in self._chunks and self._chunk_bytes + len(data) <= KEPT_CHUNK_BYTES:
            self._chunks[blob_id] = data
            self._chunk_bytes += len(data)

    def drop_chunks(self) -> None:
        """The bucket was closed, or the base commit changed: its chunks are no longer ours."""
        self._chunks.clear()
        self._chunk_bytes = 0
