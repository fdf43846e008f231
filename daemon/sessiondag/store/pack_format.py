"""The bytes of a git pack we write and of its version-2 index (the file format only: where the
files go and when they are merged is store/packs.py)."""

from __future__ import annotations

import hashlib
import itertools
import struct
import zlib
from bisect import bisect_right
from typing import Callable, Iterable

from dulwich.object_format import ObjectFormat
from dulwich.pack import UnpackedObject

from .tree_edit import EditTree


class RawRecord(tuple[bytes, bytes, int]):
    """A pack entry copied as it is stored (type/size header + zlib data): (binary sha, bytes, crc32)."""


Record = UnpackedObject | EditTree | RawRecord  # what a pack we write is made of (an EditTree: a whole tree)
STORED_MAX = 32 << 10  # objects below this size are deflated at level 0 here (see `deflated`)
_STORED_HEAD = struct.Struct("<HH")
_ADLER = struct.Struct(">I")


def deflated(head: bytes, raw: bytes, level: int) -> bytes:
    """`head` + zlib.compress(raw, level). Level 0 (stored: the default store.pack_compression) of
    an object below STORED_MAX is written here: a zlib header, one final stored block, the
    Adler-32 — the very bytes zlib writes (tests/store/test_pack_format.py), without the deflate
    state zlib sets up on every call (most of a small object's cost)."""
    if level == 0 and len(raw) < STORED_MAX:
        n = len(raw)
        return b"".join((head, b"\x78\x01\x01", _STORED_HEAD.pack(n, n ^ 0xFFFF), raw, _ADLER.pack(zlib.adler32(raw))))
    return head + zlib.compress(raw, level)


def write_pack_data(write: Callable[[bytes], object], records: Iterable[Record], object_format: ObjectFormat | None = None, num_records: int = 0,
                    compression_level: int = 0) -> tuple[dict[bytes, tuple[int, int]], bytes]:
    """Write a version-2 pack of `records` (UnpackedObjects, whole objects: no deltas, or
    RawRecords) through `write`; returns ({binary sha: (offset, crc32)}, the pack checksum). Ours
    rather than dulwich's, which writes each object in many small pieces (most of a turn commit's CPU)."""
    h = hashlib.sha1()
    head = b"PACK" + struct.pack(">II", 2, num_records)
    write(head)
    h.update(head)
    pos = len(head)
    entries: dict[bytes, tuple[int, int]] = {}
    for u in records:
        if isinstance(u, RawRecord):
            sha, data, crc = u
            write(data)
            h.update(data)
            entries[sha] = (pos, crc)
            pos += len(data)
            continue
        raw = b"".join(u.decomp_chunks)
        size = len(raw)
        if u.obj_type_num is None:  # a delta not yet resolved: never handed here (whole objects only)
            raise ValueError("write_pack_data writes whole objects, not deltas")
        c, size = (u.obj_type_num << 4) | (size & 0x0F), size >> 4
        hdr = bytearray()
        while size:
            hdr.append(c | 0x80)
            c, size = size & 0x7F, size >> 7
        hdr.append(c)
        data = deflated(bytes(hdr), raw, compression_level)
        write(data)
        h.update(data)
        entries[u.sha()] = (pos, zlib.crc32(data) & 0xFFFFFFFF)
        pos += len(data)
    checksum = h.digest()
    write(checksum)
    return entries, checksum


def pack_index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """The version-2 index of a pack: `entries` (binary sha, offset, crc32) sorted by sha.
    Built column by column in C (a merged pack's index has thousands of entries): the fan-out
    table by bisecting the first bytes (at most 256 Python steps)."""
    n = len(entries)
    shas, offs, crcs = zip(*entries) if n else ((), (), ())
    names = b"".join(shas)
    firsts = names[::20]  # each id's first byte, nondecreasing
    if n > 64:  # the count of ids up to each first byte: where it ends in the sorted column
        fan = [bisect_right(firsts, b) for b in range(256)]
    else:
        count = [0] * 256
        for b in firsts:
            count[b] += 1
        fan = list(itertools.accumulate(count))
    big: list[int] = []
    if n and max(offs) >= 0x80000000:  # offsets past 2 GiB go to the 64-bit table
        small: list[int] = []
        for off in offs:
            if off < 0x80000000:
                small.append(off)
            else:
                small.append(0x80000000 | len(big))
                big.append(off)
        offs = tuple(small)
    data = b"".join((b"\377tOc", struct.pack(">I", 2), struct.pack(">256I", *fan),
                     names, struct.pack(f">{n}I", *crcs), struct.pack(f">{n}I", *offs),
                     struct.pack(f">{len(big)}Q", *big), pack_checksum))
    return data + hashlib.sha1(data).digest()
