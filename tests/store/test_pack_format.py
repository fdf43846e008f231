"""The bytes of the packs and indexes we write (store/pack_format.py) are the ones git's own
writers make: the stored deflate we write ourselves against zlib's, the index against dulwich's
version-2 writer, and a pack of random objects through `git verify-pack` and `git fsck --strict`."""

from __future__ import annotations

import io
import os
import subprocess
import zlib

import pytest
from dulwich.objects import Blob
from dulwich.pack import write_pack_index_v2
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondag.store import packs, raw_objects
from sessiondag.store.gitstore import GitSnapshots
from sessiondag.store.pack_format import STORED_MAX, deflated, pack_index


@given(st.binary(max_size=600), st.sampled_from([0, 1, 6, 9]))
def test_deflated_is_zlibs_stream(raw, level):
    assert deflated(b"hd", raw, level) == b"hd" + zlib.compress(raw, level)


def test_deflated_at_the_stored_bounds():
    for n in (STORED_MAX - 2, STORED_MAX - 1, STORED_MAX, STORED_MAX + 1, 70_000):
        raw = os.urandom(n)
        got = deflated(b"", raw, 0)
        assert got == zlib.compress(raw, 0)
        assert zlib.decompress(got) == raw


_entries = st.lists(st.tuples(st.binary(min_size=20, max_size=20),
                              st.one_of(st.integers(0, 0x7FFFFFFF), st.integers(0x80000000, 1 << 40)),
                              st.integers(0, 0xFFFFFFFF)),
                    max_size=400, unique_by=lambda e: e[0])


@settings(max_examples=60)
@given(_entries, st.binary(min_size=20, max_size=20))
def test_pack_index_is_dulwichs_v2_index(entries, checksum):
    entries = sorted(entries)
    f = io.BytesIO()
    write_pack_index_v2(f, entries, checksum)
    assert pack_index(entries, checksum) == f.getvalue()


@pytest.mark.process   # runs git (tests/tiers.py)
def test_a_pack_we_write_verifies_with_git(tmp_path):
    gd = str(tmp_path / "git")
    GitSnapshots.init(gd)
    g = GitSnapshots(gd)
    rng = __import__("random").Random(3)
    objs = list({o.id: o for o in (raw_objects.blob(rng.randbytes(rng.choice([0, 1, 40, 5000, STORED_MAX - 1,
                                                                         STORED_MAX, 90_000])))
                                   for _ in range(300))}.values())
    name = packs.add_pack(g.repo.object_store, objs, 0, True).hex()
    idx = os.path.join(gd, "objects", "pack", f"pack-{name}.idx")
    assert subprocess.run(["git", "verify-pack", idx], capture_output=True).returncode == 0
    assert subprocess.run(["git", "-C", gd, "fsck", "--strict"], capture_output=True).returncode == 0
    g.refresh()
    for o in objs:
        assert g._obj(o.id, Blob).data == o.data
    g.close()
