"""Pack files of a session's git repository: writing one pack per commit, packing loose bodies,
merging small packs, removing what a killed writer left behind (the bytes of a pack and its index:
pack_format.py). Everything here runs under the session lock. See docs/storage.md "Turn commits".
"""

from __future__ import annotations

import hashlib
import itertools
import os
import struct
import zlib
from operator import add, itemgetter
from typing import Sequence, TypeVar

from dulwich.object_store import DiskObjectStore
from dulwich.pack import Pack, UnpackedObject, full_unpacked_object

from .durable_files import fsync_dir, write_all
from .pack_format import RawRecord, Record, pack_index, write_pack_data

TIER_WIDTH = 4                   # packs of one size tier that trigger their merge
TIER0_WIDTH = 8                  # … of the smallest tier (a turn commit's own pack: most commits)
TIER_BASE = 4 << 10              # tier t holds packs of TIER_BASE * 4**t .. 4**(t+1) bytes
MAX_LOOSE = 64                   # loose objects (spilled bodies) allowed before they are packed
SEALED_PACK_BYTES = 16 << 20     # packs this big are never rewritten on the commit path
KEPT_PACK_BYTES = 256 << 10      # unsynced packs up to this size are kept in memory for their merge
_TEMP_NAMES = itertools.count()  # temp pack names: pid + a per-process counter (O_EXCL)
# zlib level of the packs we write: the setting store.pack_compression, 0 (stored) by default: reading
# a snapshot is then a copy, not an inflate (about a quarter of a 100k-node cold open); `git gc`
# recompresses whenever disk matters.


PackEntry = tuple[bytes, int, int | None]  # an index entry: binary sha, offset, crc32 (None: a v1 index)
KeptEntry = tuple[bytes, int, int]  # … of a pack we wrote: its crc32 is always known
Kept = dict[str, tuple[bytes | None, list[KeptEntry], int]]
"""The unsynced packs this process wrote, by path without extension: (their bytes if at most
KEPT_PACK_BYTES, else None: read from the file when they merge; entries by offset; size)."""
T = TypeVar("T")


def tier_of(size: int) -> int:
    t, bound = 0, TIER_BASE * TIER_WIDTH
    while size >= bound:
        t += 1
        bound *= TIER_WIDTH
    return t


def maintain(store: DiskObjectStore, git_dir: str, level: int = 0, volatile: set[str] | None = None,
             loose_check: bool = True, kept: Kept | None = None) -> bool:
    """After a commit: keep the object store small in files: pack loose bodies, merge small packs by size tier.

    Called under the session lock after each commit. Packs of at least SEALED_PACK_BYTES are
    never rewritten here, so no commit pays for rereading the whole history. Below that, packs
    fall in size tiers (x4 each); when a tier holds TIER_WIDTH packs (the first, TIER0_WIDTH)
    they merge into one of a higher tier (size-tiered compaction): most commits merge nothing, a
    byte is rewritten about once per tier (~6), and at most 3 packs per tier (7 in the first: ~22)
    plus the sealed ones exist at once.
    Returns False if a pack vanished under our open handles (the caller reopens the repository).

    `volatile` None: every pack may merge, and the merged pack is durable (the sync point, or
    commits that sync themselves). A set: the packs (paths without extension) this process wrote
    unsynced since the last sync point — only they merge, unsynced (what they hold is in the
    journal: store/snapshot_sync.py), the set kept up to date; nothing else is listed, and the
    garbage sweep and the loose bodies wait for `loose_check` (a body was stored since the last
    look). Loose bodies are always packed durably: journal records name them. `kept` (with a
    `volatile` set): what add_pack recorded of each of them (size, entries; the bytes of the small
    ones) — a merge of kept packs lists no directory, stats none of them and reads no index (packs
    are immutable, and the caller forgets them when another process committed:
    store/pack_cache.py), reads a big one's file once, and records the merged pack in turn."""
    if volatile is None or loose_check:
        remove_garbage(git_dir)
        loose = list(store._iter_loose_objects())
        if len(loose) >= MAX_LOOSE:
            objs = [store._get_loose_object(sha) for sha in loose]
            write_pack(store, [full_unpacked_object(o) for o in objs if o is not None], [], level)
            for o in objs:
                if o is not None:
                    store.delete_loose_object(o.id)
    if volatile is None:
        pack_tiers: dict[int, list[Pack]] = {}
        for p in store.packs:
            try:
                size = os.path.getsize(p._data_path)
            except FileNotFoundError:  # removed by another process: the caller reopens the repository
                return False
            if size < SEALED_PACK_BYTES:
                pack_tiers.setdefault(tier_of(size), []).append(p)
        full_packs = _full_tier(pack_tiers)
        if full_packs is None:
            return True
        chosen = full_packs
    else:
        tiers: dict[int, list[str]] = {}
        for base in sorted(volatile):
            k = kept.get(base) if kept is not None else None
            try:  # a kept pack is still there while the commits' parent is ours (pack_cache.py)
                size = k[2] if k is not None else os.path.getsize(base + ".pack")
            except FileNotFoundError:  # merged away (or lost): no longer ours to merge
                volatile.discard(base)
                continue
            if size < SEALED_PACK_BYTES:
                tiers.setdefault(tier_of(size), []).append(base)
        bases = _full_tier(tiers)
        if bases is None:
            return True
        if kept is not None and all(b in kept for b in bases):
            try:
                parts = [_kept_bytes(b, kept[b]) for b in bases]
            except FileNotFoundError:  # removed by hand (`git gc`): forget them, reopen the repository
                for b in bases:
                    kept.pop(b, None)
                    volatile.discard(b)
                return False
            merged_base = os.path.join(store.pack_dir, "pack-" + _merge_kept(store, parts, level, kept))
            for b in bases:
                if b != merged_base:  # (one whose objects the others all hold merges into itself)
                    kept.pop(b, None)
                    _drop_pack(store, b)
            volatile.difference_update(bases)
            volatile.add(merged_base)
            return True
        by_base = {p._basename: p for p in store.packs}
        if not all(b in by_base for b in bases):
            return False
        chosen = [by_base[b] for b in bases]
    recs: Sequence[Record] | None = raw_records(chosen)
    if recs is None:  # a delta (e.g. after `git gc`): resolved objects, recompressed
        objs_by_sha: dict[bytes, UnpackedObject] = {}
        for p in chosen:
            for o in p.iterobjects():
                objs_by_sha.setdefault(o.sha().digest(), full_unpacked_object(o))
        recs = list(objs_by_sha.values())
    merged = write_pack(store, recs, chosen, level, volatile is None)
    if volatile is not None:
        volatile.difference_update(p._basename for p in chosen)
        for p in chosen:
            if kept is not None:
                kept.pop(p._basename, None)
        if merged is not None:
            volatile.add(os.path.join(store.pack_dir, "pack-" + merged.decode()))
    return True


def _full_tier(tiers: dict[int, list[T]]) -> list[T] | None:
    """The smallest tier holding enough packs to merge (one merge per commit at most: a cascade
    continues on later commits); None if none does."""
    full = [t for t, ps in tiers.items() if len(ps) >= (TIER0_WIDTH if t == 0 else TIER_WIDTH)]
    return tiers[min(full)] if full else None


def raw_records(chosen: list[Pack]) -> list[RawRecord] | None:
    """The entries of the packs `chosen`, each once, as stored (no inflate, no rehash: a merge is a
    copy); None if one is a delta (its offsets would not hold in another pack)."""
    out: list[RawRecord] = []
    seen: set[bytes] = set()
    for p in chosen:
        with open(p._data_path, "rb") as f:
            buf = f.read()
        if not _copy_records(buf, sorted(p.index.iterentries(), key=lambda e: e[1]), seen, out):
            return None
    return out


def _kept_bytes(base: str, k: tuple[bytes | None, list[KeptEntry], int]) -> tuple[bytes, list[KeptEntry]]:
    """(bytes, entries by offset) of a kept pack: its bytes from memory, else read once from its file
    (no index read, no dulwich Pack: the entries are the ones its writer recorded)."""
    data, entries, size = k
    if data is None:
        with open(base + ".pack", "rb") as f:
            data = f.read()
        if len(data) != size:  # not the file we wrote (packs are named by their content)
            raise FileNotFoundError(base + ".pack")
    return data, entries


def _merge_kept(store: DiskObjectStore, parts: list[tuple[bytes, list[KeptEntry]]], level: int,
                kept: Kept) -> str:
    """Merge kept packs (bytes, entries by offset) into one unsynced pack, kept in turn if small;
    its name (hex). A kept pack is one add_pack wrote in this process (from whole objects, or
    records copied from kept packs): it holds no delta, so its records move as they are.

    Packs that share no object merge as a concatenation of their bodies (the bytes between the
    12-byte header and the 20-byte checksum) under a new header: the very bytes a copy record by
    record writes, at C speed (no Python step per record); the entries are shifted, not rebuilt.
    Packs that share one (the same object written by two commits) merge record by record, each
    object once."""
    n = sum(len(ents) for _, ents in parts)
    if len(set(map(itemgetter(0), itertools.chain.from_iterable(ents for _, ents in parts)))) != n:
        # a shared object: each once, record by record
        out: list[RawRecord] = []
        seen: set[bytes] = set()
        for buf, ents in parts:
            _copy_records(buf, ents, seen, out)
        return add_pack(store, out, level, False, kept).hex()
    head = b"PACK" + struct.pack(">II", 2, n)
    body: list[bytes | memoryview] = [head]
    entries: list[tuple[bytes, int, int]] = []
    pos = len(head)
    for buf, ents in parts:
        if ents:  # the entries shifted column by column, in C
            shas, offs, crcs = zip(*ents)
            entries.extend(zip(shas, map(add, offs, itertools.repeat(pos - 12)), crcs))
        body.append(memoryview(buf)[12:-20])
        pos += len(buf) - 32
    h = hashlib.sha1()
    for piece in body:
        h.update(piece)
    checksum = h.digest()
    body.append(checksum)  # one copy of the merged bytes, not two
    return _install(store, b"".join(body), entries, checksum, False, kept, in_order=True).hex()


def _copy_records(buf: bytes, ents: Sequence[PackEntry], seen: set[bytes], out: list[RawRecord]) -> bool:
    """Append the entries `ents` (binary sha, offset, crc32 or None; by offset) of the pack `buf`
    not `seen` yet to `out` as RawRecords; False at a delta (`out` is then incomplete)."""
    ends = [e[1] for e in ents[1:]] + [len(buf) - 20]
    for (sha, off, crc), end in zip(ents, ends):
        if (buf[off] >> 4) & 7 in (6, 7):  # OFS_DELTA, REF_DELTA
            return False
        if sha in seen:
            continue
        seen.add(sha)
        data = buf[off:end]
        out.append(RawRecord((sha, data, zlib.crc32(data) if crc is None else crc)))
    return True


def _drop_pack(store: DiskObjectStore, base: str) -> None:
    """Remove the pack `base` (path without extension) merged away: through dulwich if it has it open."""
    pack = store._pack_cache.get(os.path.basename(base))
    if pack is not None:
        store._remove_pack(pack)
    for path in (base + ".idx", base + ".pack"):  # the index first: a pack without one is unused
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _write_new(path: str, data: bytes, durable: bool, exclusive: bool = True) -> None:
    """Write `data` as the file `path` (0600, never through a symlink), fsync'd if `durable`; a
    failed write removes the file it created."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    try:
        write_all(fd, data, path)
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(path)
        raise
    os.close(fd)


def add_pack(store: DiskObjectStore, records: Sequence[Record], level: int = 0, durable: bool = True,
             keep: Kept | None = None) -> bytes:
    """Write `records` (UnpackedObjects, or objects with the same `obj_type_num`, `decomp_chunks`
    and `sha()`) as one durable pack + index; returns its checksum.

    Our own writer rather than dulwich's add_objects, which derives the name of every
    existing pack (hashing all their object ids) on each call: O(history) per commit.
    The pack is built in memory, so its name (its checksum) is known before anything is written:
    it is written under that name at once (git and dulwich only use a pack whose .idx exists, and
    a killed writer's lone .pack is garbage: remove_garbage), then the index under a temp name,
    renamed in, and the directory fsync'd — all before the caller moves the ref, so a ref never
    names an object that is not durable. A pack whose index is already there holds these very
    bytes (it is named by them): nothing is written. `durable=False`: no fsync at all (a turn
    commit's pack: store/snapshot_sync.py syncs it later). `keep`: the pack is recorded
    there under its path without extension, (its bytes if at most KEPT_PACK_BYTES else None,
    entries by offset, size), for `maintain` to merge without stat, listing or index read."""
    pieces: list[bytes] = []
    entries, checksum = write_pack_data(pieces.append, iter(records), store.object_format,
                                        num_records=len(records), compression_level=level)
    return _install(store, b"".join(pieces), [(k, off, crc) for k, (off, crc) in entries.items()],
                    checksum, durable, keep)


def _install(store: DiskObjectStore, data: bytes, entries: list[tuple[bytes, int, int]], checksum: bytes,
             durable: bool, keep: Kept | None, in_order: bool = False) -> bytes:
    """Write the pack `data` (its `entries`: binary sha, offset, crc32; by offset if `in_order`)
    and its index as add_pack says; returns its checksum."""
    pack_dir = os.fspath(store.pack_dir)
    index = pack_index(sorted(entries), checksum)
    base = os.path.join(pack_dir, "pack-" + checksum.hex())
    try:
        _write_new(base + ".pack", data, durable)
    except FileExistsError:
        if os.path.exists(base + ".idx"):  # this very pack is there, whole
            index = b""
        else:  # a killed writer's lone pack: ours to replace
            _write_new(base + ".pack", data, durable, exclusive=False)
    if index:
        # temp names must not end in .pack/.idx: a matching pair would look like a real pack
        idx_tmp = os.path.join(pack_dir, f"tmp_{os.getpid()}_{next(_TEMP_NAMES)}.idx-tmp")  # cheaper than mkstemp
        try:
            _write_new(idx_tmp, index, durable)
            os.rename(idx_tmp, base + ".idx")
        except BaseException:  # the pack without its index is unused: removed with the temp file
            _unlink_quietly(idx_tmp)
            _unlink_quietly(base + ".pack")
            raise
        if durable:
            fsync_dir(pack_dir)
    if keep is not None:
        keep[base] = (data if len(data) <= KEPT_PACK_BYTES else None,
                      entries if in_order else sorted(entries, key=lambda e: e[1]), len(data))
    return checksum


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_pack(store: DiskObjectStore, records: Sequence[Record], replaces: list[Pack], level: int = 0, durable: bool = True) -> bytes | None:
    """Write `records` (UnpackedObjects) as one pack, make it durable (unless not `durable`), then
    drop the packs it replaces. Returns the new pack's name (hex), None if there was nothing."""
    name = add_pack(store, records, level, durable).hex().encode() if records else None
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
    return name


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
