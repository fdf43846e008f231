"""Git blobs and commits as a turn commit writes them (store/gitstore.py): the object's bytes and
its id, computed once, and nothing else — what store/packs.py reads of a pack record
(`obj_type_num`, `decomp_chunks`, `sha()`), like tree_edit.py's EditTree for trees.

dulwich's Blob and Commit do the same job generically (a ShaFile each, its chunk list, a
full_unpacked_object copy for the pack): about a tenth of a turn commit's CPU for its three blobs
(chunk, index, meta.json) and one commit. The bytes are git's; `commit_bytes` writes what dulwich's
Commit serializes for the same fields (tests/store/test_tree_edit.py compares the two, and
tests/store/test_git.py runs `git fsck --strict` on what we write).
"""

from __future__ import annotations

import hashlib

BLOB, COMMIT = 3, 1          # git's object type numbers
_NAMES = {BLOB: b"blob", COMMIT: b"commit"}


class RawObject:
    """A whole git object: type number, content, binary id (hex: `id`)."""

    __slots__ = ("obj_type_num", "data", "_sha")

    def __init__(self, type_num: int, data: bytes):
        self.obj_type_num = type_num
        self.data = data
        h = hashlib.sha1(b"%s %d\0" % (_NAMES[type_num], len(data)))
        h.update(data)
        self._sha = h.digest()

    def sha(self) -> bytes:
        """The binary object id."""
        return self._sha

    @property
    def id(self) -> bytes:
        """The hex object id (as dulwich's `ShaFile.id`)."""
        return self._sha.hex().encode()

    @property
    def decomp_chunks(self) -> list[bytes]:
        return [self.data]


def blob(data: bytes) -> RawObject:
    return RawObject(BLOB, data)


def commit_bytes(tree: bytes, parents: list[bytes], identity: bytes, when: int, message: bytes) -> bytes:
    """A commit's content: `tree` and `parents` hex ids, author = committer = `identity` at `when`
    (seconds, UTC), `message` ending in a newline."""
    stamp = b"%s %d +0000" % (identity, when)
    return b"".join([b"tree %s\n" % tree, *(b"parent %s\n" % p for p in parents),
                     b"author %s\ncommitter %s\n\n" % (stamp, stamp), message])


def commit(tree: bytes, parents: list[bytes], identity: bytes, when: int, message: bytes) -> RawObject:
    return RawObject(COMMIT, commit_bytes(tree, parents, identity, when, message))
