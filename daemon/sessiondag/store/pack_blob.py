"""A blob read straight from the pack holding it, when it is stored whole there: one inflate into
a buffer of its size (store/node_index.py reads the chunks of deferred bodies this way)."""

from __future__ import annotations

import binascii
import mmap
import zlib

from dulwich.objects import Blob, RawObjectID
from dulwich.pack import Pack


def whole_blob(packs: list[Pack], sha: bytes, maps: dict[str, mmap.mmap | None]) -> bytes | None:
    """The blob `sha` (hex) read straight from the pack holding it when it is stored whole there
    (not as a delta): its header parsed and its zlib stream inflated at once into a buffer of the
    size the header gives, out of a mapping of the pack (`maps`: path -> mapping, kept by the
    caller across reads, closed by it; None for a pack that could not be mapped). None for
    anything else — not in a pack, a delta, another type, a size or stream that does not check
    out: the caller reads it as dulwich does, which reports what is wrong. dulwich feeds a stream
    to zlib in 64 KiB slices and joins the pieces: for a cold render of a 100k-node chat (105 MB
    of chunks) that was about half of reading the bodies. zlib checks the stream (its adler32)."""
    raw_sha = binascii.unhexlify(sha)
    for pack in packs:
        try:
            off = pack.index.object_offset(RawObjectID(raw_sha))
        except KeyError:
            continue
        path = pack._data_path
        if path not in maps:
            try:
                with open(path, "rb") as f:
                    maps[path] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                maps[path] = None
        m = maps[path]
        if m is None or not 12 <= off < len(m):
            return None
        b = m[off]
        type_num, size, shift, i = (b >> 4) & 7, b & 15, 4, off + 1
        while b & 0x80 and i < len(m) and shift < 64:
            b = m[i]
            size |= (b & 0x7F) << shift
            shift += 7
            i += 1
        if type_num != Blob.type_num or b & 0x80:
            return None
        # the input bounded by what a stored (level 0) stream of `size` takes, the output by `size`
        # (+1 to see an overrun): the header is hostile until checked, so neither a huge size nor
        # a stream that inflates past it can take more memory than the blob it claims to be
        bound = size + 5 * (size // 16383 + 2) + 64
        try:
            with memoryview(m) as view, view[i:i + bound] as stream:
                z = zlib.decompressobj()
                data = z.decompress(stream, size + 1)
        except zlib.error:
            return None
        return data if len(data) == size and z.eof else None
    return None
