"""Pack files of a session's git repository: writing one pack per commit, packing loose bodies,
merging small packs, removing what a killed writer left behind. Everything here runs under the
session lock. See docs/storage.md "Turn commits".
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from dulwich.pack import full_unpacked_object, write_pack_data, write_pack_index

from .durable_files import fsync_dir

TIER_WIDTH = 4                   # packs of one size tier that trigger their merge
TIER_BASE = 4 << 10              # tier t holds packs of TIER_BASE * 4**t .. 4**(t+1) bytes
MAX_LOOSE = 64                   # loose objects (spilled bodies) allowed before they are packed
SEALED_PACK_BYTES = 16 << 20     # packs this big are never rewritten on the commit path
# zlib level of the packs we write: the setting store.pack_compression, 0 (stored) by default: reading
# a snapshot is then a copy, not an inflate (about a quarter of a 100k-node cold open); `git gc`
# recompresses whenever disk matters.


def tier_of(size: int) -> int:
    t, bound = 0, TIER_BASE * TIER_WIDTH
    while size >= bound:
        t += 1
        bound *= TIER_WIDTH
    return t


def maintain(store, git_dir: str, level: int = 0) -> bool:
    """After a commit: keep the object store small in files: pack loose bodies, merge small packs by size tier.

    Called under the session lock after each commit. Packs of at least SEALED_PACK_BYTES are
    never rewritten here, so no commit pays for rereading the whole history. Below that, packs
    fall in size tiers (x4 each); when a tier holds TIER_WIDTH packs they merge into one of a
    higher tier (size-tiered compaction): most commits merge nothing, a byte is rewritten about
    once per tier (~6), and at most 3 packs per tier (~18) plus the sealed ones exist at once.
    Returns False if a pack vanished under our open handles (the caller reopens the repository)."""
    remove_garbage(git_dir)
    loose = list(store._iter_loose_objects())
    if len(loose) >= MAX_LOOSE:
        objs = [store._get_loose_object(sha) for sha in loose]
        write_pack(store, [full_unpacked_object(o) for o in objs if o is not None], [], level)
        for o in objs:
            if o is not None:
                store.delete_loose_object(o.id)
    tiers: dict[int, list] = {}
    for p in store.packs:
        try:
            size = os.path.getsize(p._data_path)
        except FileNotFoundError:  # removed by another process: the caller reopens the repository
            return False
        if size < SEALED_PACK_BYTES:
            tiers.setdefault(tier_of(size), []).append(p)
    full = [t for t, ps in tiers.items() if len(ps) >= TIER_WIDTH]
    if not full:
        return True
    chosen = tiers[min(full)]  # one merge per commit at most: a cascade continues on later commits
    recs: dict[bytes, Any] = {}
    for p in chosen:
        ups = list(p.iter_unpacked())  # raw records with the index's ids: no parse, no rehash
        if any(u.delta_base is not None for u in ups):  # a delta (e.g. after `git gc`): resolve
            ups = [full_unpacked_object(o) for o in p.iterobjects()]
        for u in ups:
            recs.setdefault(u.sha(), u)
    write_pack(store, list(recs.values()), chosen, level)
    return True


def add_pack(store, records: list, level: int = 0) -> bytes:
    """Write `records` (UnpackedObjects) as one durable pack + index; returns its checksum.

    Our own writer rather than dulwich's add_objects, which derives the name of every
    existing pack (hashing all their object ids) on each call: O(history) per commit.
    Order: pack and index fsync'd under temp names, the pack renamed in, then the index
    (dulwich and git only use a pack whose .idx exists), then the directory fsync'd — all
    before the caller moves the ref, so a ref never names an object that is not durable."""
    pack_dir = store.pack_dir
    # temp names must not end in .pack/.idx: a matching pair would look like a real pack
    fd, tmp = tempfile.mkstemp(dir=pack_dir, prefix="tmp_", suffix=".pack-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            entries, checksum = write_pack_data(
                f.write, iter(records), store.object_format,
                num_records=len(records), compression_level=level)
            f.flush()
            os.fsync(f.fileno())
        idx_tmp = tmp[:-9] + ".idx-tmp"
        with os.fdopen(os.open(idx_tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as f:
            write_pack_index(f, sorted((k, off, crc) for k, (off, crc) in entries.items()), checksum)
            f.flush()
            os.fsync(f.fileno())
        base = os.path.join(pack_dir, "pack-" + checksum.hex())
        os.rename(tmp, base + ".pack")
        os.rename(idx_tmp, base + ".idx")
    except BaseException:
        for path in (tmp, tmp[:-9] + ".idx-tmp"):
            if os.path.exists(path):
                os.unlink(path)
        raise
    fsync_dir(pack_dir)
    return checksum


def write_pack(store, records: list, replaces: list, level: int = 0) -> None:
    """Write `records` (UnpackedObjects) as one pack, make it durable, then drop the packs it
    replaces."""
    name = add_pack(store, records, level).hex().encode() if records else None
    for p in replaces:
        if p._basename.endswith(name.decode() if name else "\0"):
            continue
        idx, data = p._idx_path, p._data_path
        store._remove_pack(p)
        for path in (idx, data):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def remove_garbage(git_dir: str) -> None:
    """Temp files a killed writer left (we hold the session lock: nobody is writing them)."""
    pack_dir = os.path.join(git_dir, "objects", "pack")
    try:
        names = os.listdir(pack_dir)
    except FileNotFoundError:
        return
    have = set(names)
    for name in names:
        orphan_pack = name.endswith(".pack") and name[:-5] + ".idx" not in have
        orphan_idx = name.endswith(".idx") and name[:-4] + ".pack" not in have
        if name.startswith("tmp") or name.endswith(".lock") or orphan_pack or orphan_idx:
            try:
                os.unlink(os.path.join(pack_dir, name))
            except FileNotFoundError:
                pass
    objects = os.path.join(git_dir, "objects")
    for name in os.listdir(objects):
        if name.startswith("tmp_"):
            try:
                os.unlink(os.path.join(objects, name))
            except (FileNotFoundError, IsADirectoryError):
                pass
