"""The pack a clone receives, taken in one pass over bytes that are hostile until checked.

dulwich's fetch into a repository reads a received pack three times in Python (a copy that inflates
every object, an index that resolves every delta chain, a completion that re-hashes the file and
inflates every object once more), and the snapshot is then read back from the new pack. A clone
needs none of that twice: `parse` checks the pack's trailing checksum, inflates each entry once
(its declared size held to), resolves each delta once against its base (dulwich's C
`apply_delta`), hashes each object once and parses every commit, tree and tag as dulwich's
completion would; `write_into` stores the very bytes received with the index built from that pass,
durably; the snapshot is read from the objects in memory (`Objects`).

A clone asks for everything (no haves), so a delta whose base is not in the pack is refused (the
remote sent a thin pack against objects we never named); a pull, which has haves, keeps dulwich's
path (fetch.py).
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from typing import Callable, Mapping

from dulwich.objects import ObjectID, ShaFile
from dulwich.object_store import ObjectStoreGraphWalker
from dulwich.pack import apply_delta
from dulwich.refs import Ref

from ..store.durable_files import fsync_dir
from ..store.pack_format import pack_index
from . import transport
from .errors import RemoteDataError, RemoteTooMuchError

_TYPE_NAMES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_OFS_DELTA, _REF_DELTA = 6, 7


class ReceivedPack:
    """A checked pack: its bytes, its index entries (binary sha, offset, crc32), every object by
    hex sha as (type number, content)."""

    def __init__(self, data: bytes, entries: list[tuple[bytes, int, int]], objects: dict[bytes, tuple[int, bytes]]):
        self.data = data
        self.entries = entries
        self.objects = objects

    @property
    def checksum(self) -> bytes:
        return self.data[-20:]

    def write_into(self, objects_dir: str) -> str:
        """The pack and its index under `objects_dir`/pack, durable (each file and the directory
        fsync'd; the index last, so no reader finds an index without its pack). Returns the base path."""
        pack_dir = os.path.join(objects_dir, "pack")
        os.makedirs(pack_dir, exist_ok=True)
        base = os.path.join(pack_dir, "pack-" + self.checksum.hex())
        index = pack_index(sorted(self.entries), self.checksum)
        for path, body in ((base + ".pack", self.data), (base + ".idx", index)):
            tmp = path + "-tmp"
            with open(tmp, "wb") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o444)
            os.rename(tmp, path)
        fsync_dir(pack_dir)
        return base


class Objects:
    """The received objects as an object store is read (`store[sha]`, `sha in store`)."""

    def __init__(self, objects: dict[bytes, tuple[int, bytes]]):
        self._objects = objects

    def __contains__(self, sha: object) -> bool:
        return sha in self._objects

    def __getitem__(self, sha: bytes) -> ShaFile:
        type_num, content = self._objects[sha]
        return ShaFile.from_raw_string(type_num, content, ObjectID(sha))


def fetch(url: str, pick: Callable[[dict[bytes, bytes]], bytes], bounds: transport.Bounds,
          max_inflated: int) -> tuple[bytes, ReceivedPack]:
    """(the commit `pick(refs)` chose from the remote's refs, everything it reaches as one checked
    pack; nothing written), in one connection: the refs are the fetch's own advertisement."""
    pieces: list[bytes] = []
    chosen: list[ObjectID] = []

    def pack_data(b: bytes) -> int:
        pieces.append(b)
        return len(b)

    def wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        chosen.append(ObjectID(pick({n: v for n, v in refs.items() if v is not None})))
        return chosen
    transport.call(url, "pull", lambda client, path: client.fetch_pack(
        path, wants, ObjectStoreGraphWalker([], lambda sha: []), pack_data), bounds)
    want = chosen[0]
    data = b"".join(pieces)
    if not data:
        raise RemoteDataError(f"the remote sent no objects for commit {want.decode()}")
    got = parse(data, max_inflated)
    if want not in got.objects or got.objects[want][0] != 1:
        raise RemoteDataError(f"the remote did not send commit {want.decode()}")
    return want, got


def parse(data: bytes, max_inflated: int) -> ReceivedPack:
    """Check and index a whole (not thin) pack; RemoteDataError if it is not one, RemoteTooMuchError
    past `max_inflated` bytes of objects."""
    if len(data) < 32 or data[:4] != b"PACK":
        raise RemoteDataError("the remote sent something that is not a pack")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        raise RemoteDataError(f"the remote sent a pack of version {version}")
    end = len(data) - 20
    view = memoryview(data)
    if hashlib.sha1(view[:end]).digest() != data[end:]:
        raise RemoteDataError("the remote's pack does not match its checksum")
    if count > end // 2:  # an entry takes at least two bytes
        raise RemoteDataError(f"the remote's pack claims {count} objects in {end} bytes")
    by_offset: dict[int, tuple[int, bytes]] = {}
    objects: dict[bytes, tuple[int, bytes]] = {}
    entries: list[tuple[bytes, int, int]] = []
    waiting: dict[bytes, list[tuple[int, bytes, int]]] = {}  # base sha -> (offset, delta, crc)
    inflated = 0
    pos = 12
    for _ in range(count):
        start = pos
        type_num, size, pos = _entry_header(data, pos, end)
        base_at, base_sha = -1, b""
        if type_num == _OFS_DELTA:
            back, pos = _ofs_header(data, pos, end)
            base_at = start - back
            if base_at < 12 or base_at >= start:
                raise RemoteDataError(f"pack entry at {start}: its delta base is outside the pack")
        elif type_num == _REF_DELTA:
            if pos + 20 > end:
                raise RemoteDataError("the remote's pack is truncated")
            base_sha, pos = bytes(view[pos:pos + 20]).hex().encode(), pos + 20
        elif type_num not in _TYPE_NAMES:
            raise RemoteDataError(f"pack entry at {start}: unknown object type {type_num}")
        inflated += size
        if inflated > max_inflated:
            raise RemoteTooMuchError(f"the remote's pack inflates to more than {max_inflated} bytes",
                                     reason="too_much", limit=max_inflated)
        content, pos = _inflate(view, pos, size, end)
        crc = zlib.crc32(view[start:pos])
        if type_num == _OFS_DELTA:
            base = by_offset.get(base_at)
            if base is None:
                raise RemoteDataError(f"pack entry at {start}: no object starts at its delta base")
            _add(base[0], _patch(base[1], content, start), start, crc, by_offset, objects, entries, waiting)
        elif type_num == _REF_DELTA:
            if base_sha in objects:
                known = objects[base_sha]
                _add(known[0], _patch(known[1], content, start), start, crc, by_offset, objects, entries, waiting)
            else:
                waiting.setdefault(base_sha, []).append((start, content, crc))
        else:
            _add(type_num, content, start, crc, by_offset, objects, entries, waiting)
    if pos != end:
        raise RemoteDataError("the remote's pack holds bytes after its last object")
    if waiting:
        raise RemoteDataError(f"the remote's pack deltas against {next(iter(waiting)).decode()}, which it did not send")
    for sha, (type_num, content) in objects.items():
        if type_num != 3:   # commits, trees and tags must parse (blobs are bytes)
            try:
                ShaFile.from_raw_string(type_num, content, ObjectID(sha))
            except Exception as e:
                raise RemoteDataError(f"remote object {sha.decode()} does not parse as a "
                                      f"{_TYPE_NAMES[type_num].decode()}: {e}") from None
    return ReceivedPack(data, entries, objects)


def _add(type_num: int, content: bytes, at: int, crc: int, by_offset: dict[int, tuple[int, bytes]],
         objects: dict[bytes, tuple[int, bytes]], entries: list[tuple[bytes, int, int]],
         waiting: dict[bytes, list[tuple[int, bytes, int]]]) -> None:
    """One resolved object; then the REF deltas that waited for it, and theirs in turn."""
    todo = [(type_num, content, at, crc)]
    while todo:
        t, c, off, cr = todo.pop()
        h = hashlib.sha1(_TYPE_NAMES[t] + b" %d\0" % len(c))
        h.update(c)
        binsha = h.digest()
        sha = binsha.hex().encode()
        by_offset[off] = (t, c)
        if sha in objects:
            raise RemoteDataError(f"the remote's pack holds object {sha.decode()} twice")
        objects[sha] = (t, c)
        entries.append((binsha, off, cr))
        for w_off, delta, w_crc in waiting.pop(sha, ()):
            todo.append((t, _patch(c, delta, w_off), w_off, w_crc))


def _patch(base: bytes, delta: bytes, at: int) -> bytes:
    try:
        return b"".join(apply_delta(base, delta))
    except Exception as e:
        raise RemoteDataError(f"pack entry at {at}: its delta does not apply: {e}") from None


def _entry_header(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    if pos >= end:
        raise RemoteDataError("the remote's pack is truncated")
    c = data[pos]
    pos += 1
    type_num, size, shift = (c >> 4) & 7, c & 15, 4
    while c & 0x80:
        if pos >= end or shift > 63:
            raise RemoteDataError("a pack entry's header is malformed")
        c = data[pos]
        pos += 1
        size |= (c & 0x7F) << shift
        shift += 7
    return type_num, size, pos


def _ofs_header(data: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise RemoteDataError("the remote's pack is truncated")
    c = data[pos]
    pos += 1
    off, n = c & 0x7F, 0
    while c & 0x80:
        if pos >= end or n > 9:
            raise RemoteDataError("a pack entry's delta offset is malformed")
        c = data[pos]
        pos += 1
        n += 1
        off = ((off + 1) << 7) | (c & 0x7F)
    return off, pos


def _inflate(view: memoryview, pos: int, size: int, end: int) -> tuple[bytes, int]:
    """The `size` bytes a zlib stream at `pos` inflates to, and where it ends; more or fewer is an error."""
    d = zlib.decompressobj()
    out: list[bytes] = []
    got, step = 0, size + (size >> 6) + 64   # what a stream of `size` bytes takes, mostly
    try:
        while not d.eof:
            if pos >= end:
                raise RemoteDataError("a pack entry's data is truncated")
            chunk = view[pos:min(pos + step, end)]
            part = d.decompress(chunk, size + 1 - got)
            got += len(part)
            out.append(part)
            if got > size or d.unconsumed_tail:
                raise RemoteDataError(f"a pack entry inflates to more than its declared {size} bytes")
            pos += len(chunk) - len(d.unused_data)
            step *= 2
    except zlib.error as e:
        raise RemoteDataError(f"a pack entry's data does not inflate: {e}") from None
    if got != size:
        raise RemoteDataError(f"a pack entry inflates to {got} bytes, not its declared {size}")
    return out[0] if len(out) == 1 else b"".join(out), pos

