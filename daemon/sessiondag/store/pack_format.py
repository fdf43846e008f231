"""The bytes of a git pack we write and of its version-2 index (the file format only: where the
files go and when they are merged is store/packs.py)."""

from __future__ import annotations

import hashlib
import itertools
import struct
import zlib
from typing import Callable, Iterable

from dulwich.object_format import ObjectFormat
from dulwich.pack import UnpackedObject

from .tree_edit import EditTree


class RawRecord(tuple[bytes, bytes, int]):
    """A pack entry copied as it is stored (type/size header + zlib data): (binary sha, bytes, crc32)."""


Record = UnpackedObject | EditTree | RawRecord  # what a pack we write is made of (an EditTree: a whole tree)


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
        data = bytes(hdr) + zlib.compress(raw, compression_level)
        write(data)
        h.update(data)
        entries[u.sha()] = (pos, zlib.crc32(data) & 0xFFFFFFFF)
        pos += len(data)
    checksum = h.digest()
    write(checksum)
    return entries, checksum


def pack_index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """The version-2 index of a pack: `entries` (binary sha, offset, crc32) sorted by sha."""
    n = len(entries)
    fan = [0] * 256
    for sha, _, _ in entries:
        fan[sha[0]] += 1
    offsets: list[int] = []
    big: list[int] = []
    for _, off, _ in entries:
        if off < 0x80000000:
            offsets.append(off)
        else:
            offsets.append(0x80000000 | len(big))
            big.append(off)
    data = b"".join((b"\377tOc", struct.pack(">I", 2), struct.pack(">256I", *itertools.accumulate(fan)),
                     b"".join(e[0] for e in entries), struct.pack(f">{n}I", *(e[2] for e in entries)),
                     struct.pack(f">{n}I", *offsets), struct.pack(f">{len(big)}Q", *big), pack_checksum))
    return data + hashlib.sha1(data).digest()
