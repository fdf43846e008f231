"""Names under a working dir: paths split into components (refusing the ones that would lead out
before any syscall), and names shown to people and models losslessly and encodably."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from ..core.errors import PathRefusedError


@dataclass(frozen=True)
class Entry:
    """One directory entry, as the directory says it is (symlinks are not followed)."""
    name: bytes
    kind: str       # "file" | "dir" | "symlink" | "fifo" | "socket" | "device" | "other"

    @property
    def shown(self) -> str:
        return shown(self.name)


def kind_of(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def shown(name: bytes) -> str:
    """`name` as a str that always encodes to UTF-8 and maps back losslessly (unshown)."""
    out = []
    for piece in name.decode("utf-8", errors="surrogateescape"):
        o = ord(piece)
        if 0xDC80 <= o <= 0xDCFF:           # a byte that was not UTF-8
            out.append(f"\\x{o - 0xDC00:02x}")
        elif piece == "\\":
            out.append("\\\\")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(piece)
    return "".join(out)


_ESCAPE = re.compile(r"\\(\\|x[0-9a-fA-F]{2})")


def unshown(text: str) -> bytes:
    """The bytes that `shown` showed as `text` (text without escapes is just encoded)."""
    out, pos = bytearray(), 0
    for m in _ESCAPE.finditer(text):
        out += text[pos:m.start()].encode("utf-8", errors="surrogateescape")
        tok = m.group(1)
        out += b"\\" if tok == "\\" else bytes([int(tok[1:], 16)])
        pos = m.end()
    out += text[pos:].encode("utf-8", errors="surrogateescape")
    return bytes(out)


def label(path: str | bytes) -> str:
    return shown(os.fsencode(path) if isinstance(path, str) else bytes(path))


def split(path: str | bytes) -> list[bytes]:
    """The components of a relative path, or PathRefusedError (absolute, `..`, empty, NUL)."""
    try:
        raw = os.fsencode(path) if isinstance(path, str) else bytes(path)
    except (UnicodeEncodeError, TypeError):
        raise PathRefusedError(repr(path), "not a path (a lone surrogate or not text)", "not_a_path") from None
    text = shown(raw)
    if not raw or b"\x00" in raw:
        raise PathRefusedError(text, "not a path", "not_a_path")
    if raw.startswith(b"/"):
        raise PathRefusedError(text, "absolute paths are refused; use a path relative to the working dir",
                               "absolute")
    parts = [p for p in raw.split(b"/") if p and p != b"."]
    if b".." in parts:
        raise PathRefusedError(text, "'..' is refused", "dot_dot")
    return parts
