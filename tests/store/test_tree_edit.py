"""store/tree_edit.py's EditTree writes the very bytes and id dulwich's Tree does for the same
entries (git's order: a tree's name compared as if it ended in "/", so `00.jsonl` sorts before the
tree `00`), through any sequence of edits, and copies a stored tree exactly; store/raw_objects.py's
blobs and commits are dulwich's Blob and Commit byte for byte."""

from __future__ import annotations

import hashlib

from dulwich.objects import Blob, Commit, Tree
from hypothesis import given, settings, strategies as st

from sessiondag.store import raw_objects
from sessiondag.store.gitstore import IDENTITY
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


# --- store/raw_objects.py: blobs and commits as a turn commit writes them -----------------------
hexes = st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode())


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_a_raw_blob_is_dulwichs_blob(data):
    b = raw_objects.blob(data)
    assert b.id == Blob.from_string(data).id and b.decomp_chunks == [data] and b.obj_type_num == Blob.type_num


@settings(max_examples=100, deadline=None)
@given(hexes, st.lists(hexes, max_size=2), st.integers(0, 2**33),
       st.text(min_size=1, max_size=80).map(lambda t: t.encode() + b"\n"))
def test_a_raw_commit_is_dulwichs_commit(tree, parents, when, message):
    ours = raw_objects.commit(tree, parents, IDENTITY, when, message)
    c = Commit()
    c.tree, c.parents, c.author = tree, parents, IDENTITY
    c.committer = IDENTITY
    c.author_time = c.commit_time = when
    c.author_timezone = c.commit_timezone = 0
    c.message = message
    assert ours.data == c.as_raw_string() and ours.id == c.id and ours.obj_type_num == Commit.type_num
