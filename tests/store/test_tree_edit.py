"""store/tree_edit.py's EditTree writes the very bytes and id dulwich's Tree does for the same
entries (git's order: a tree's name compared as if it ended in "/", so `00.jsonl` sorts before the
tree `00`), through any sequence of edits, and copies a stored tree exactly."""

from __future__ import annotations

import hashlib

from dulwich.objects import Tree
from hypothesis import given, settings, strategies as st

from sessiondag.store.tree_edit import MODE_TREE, EditTree

MODE_FILE = 0o100644
names = st.sampled_from([b"00", b"00.jsonl", b"00.json", b"01", b"0000", b"0", b"0.", b"0-", b"meta.json",
                         b"nodes", b"index", b"blobs", b"workspace", b"a", b"a.b", b"a0", b"ab"])
shas = st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode())
edits = st.lists(st.tuples(st.booleans(), names, st.sampled_from([MODE_FILE, MODE_TREE]), shas), max_size=40)


@settings(max_examples=200, deadline=None)
@given(edits)
def test_edits_serialize_as_dulwich_does(ops):
    ours, theirs = EditTree(), Tree()
    for put, name, mode, sha in ops:
        if put:
            ours[name] = (mode, sha)
            theirs[name] = (mode, sha)
        elif name in ours:
            del ours[name]
            del theirs[name]
        assert ours.raw() == theirs.as_raw_string()
        assert ours.id == theirs.id
        assert ours.sha() == hashlib.sha1(b"tree %d\0" % len(ours.raw()) + ours.raw()).digest()
    copy = EditTree.of(theirs)
    assert copy.raw() == theirs.as_raw_string() and copy.entries == ours.entries
    assert [n for n, _ in copy.names()] == sorted(copy.entries)
