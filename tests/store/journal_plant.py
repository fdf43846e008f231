"""Plant what a hostile or broken writer would in a session: raw records at the journal's logical end
(the hint moved so live readers notice), symlinks to outside copies in place of its entries (tests)."""

from __future__ import annotations

import os
import shutil
import struct

import orjson

HINT = struct.Struct("<QQ")


def logical_end(journal: str) -> int:
    data = open(journal, "rb").read()
    z = data.find(b"\0")
    return len(data) if z < 0 else z


def last_node(journal: str) -> dict:
    """The newest node record in the journal (a template for planted ones)."""
    data = open(journal, "rb").read()
    end = data.find(b"\0")
    recs = [orjson.loads(line) for line in data[:end if end >= 0 else None].splitlines()[1:] if line]
    return next(r["a"] for r in reversed(recs) if "a" in r)


def plant(session_dir: str, lines: list[bytes]) -> int:
    """Write `lines` at the journal's logical end (and move the hint); returns their offset."""
    journal = os.path.join(session_dir, "journal.log")
    at = logical_end(journal)
    data = b"".join(line + b"\n" for line in lines)
    fd = os.open(journal, os.O_WRONLY)
    try:
        os.pwrite(fd, data, at)
        os.fsync(fd)
        ino = os.fstat(fd).st_ino
    finally:
        os.close(fd)
    with open(os.path.join(session_dir, "lock"), "r+b") as f:
        f.write(HINT.pack(ino, at + len(data)))
    return at


def node(template: dict, **fields) -> bytes:
    return orjson.dumps({"a": {**template, "input": None, "output": "planted", "metadata": {}, **fields}})


def plant_link(session_dir: str, entry: str, outside: str) -> None:
    """Replace `entry` of a session with a symlink to `outside`, which gets a copy of it (so that
    following the link would "work"); an entry that does not exist becomes a link to an empty dir."""
    real = os.path.join(session_dir, entry)
    if not os.path.lexists(real):  # (running/ exists only while a node runs)
        os.makedirs(outside)
    elif os.path.isdir(real):
        shutil.copytree(real, outside)
        shutil.rmtree(real)
    else:
        shutil.copy(real, outside)
        os.unlink(real)
    os.symlink(outside, real)


def contents(path: str):
    """A file's bytes, or a directory's files and their bytes (to see that nothing changed)."""
    if os.path.isdir(path):
        return sorted((os.path.relpath(os.path.join(d, f), path), open(os.path.join(d, f), "rb").read())
                      for d, _, fs in os.walk(path) for f in fs)
    return open(path, "rb").read()
