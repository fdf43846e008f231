"""A clone's pack is taken in one pass (sync/received_pack.py): what the git CLI packs — with
offset deltas and with ref deltas — reads back as the very objects git holds, and its index as
git's own; bytes that are not such a pack (a checksum that holds over damaged entries included)
are refused as remote data, never another error; so are the untrusted node records, by
Call.from_dict's rules exactly (sync/untrusted_nodes.py)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import zlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag.core.errors import SessionDagError
from sessiondag.core.model import FIELDS, Call
from sessiondag.sync import received_pack, untrusted_nodes
from sessiondag.sync.errors import RemoteDataError

from .conftest import add_turn, store_at


def _git(*args, **kw):
    return subprocess.run(["git", *args], check=True, capture_output=True, **kw).stdout


@pytest.fixture(scope="module")
def session_repo(tmp_path_factory):
    """A real session's repository, its history and every object in it."""
    tmp = tmp_path_factory.mktemp("rp")
    store = store_at(tmp / "state")
    store.open_session("s", working_dir=None)
    s = store.session("s")
    for i in range(30):
        add_turn(s, f"turn {i} " + "the same words again " * 20, reply=f"reply {i} " + "and again " * 30)
    git_dir = s.git.git_dir
    store.close()
    _git("-C", git_dir, "repack", "-adq", "-f", "--depth=20")   # deltas, as a server sends them
    shas = _git("-C", git_dir, "rev-list", "--objects", "refs/heads/main").split()
    shas = sorted({x.decode() for x in shas if len(x) == 40})
    return git_dir, shas


def _pack(git_dir, shas, *flags):
    return _git("-C", git_dir, "pack-objects", "--stdout", "-q", *flags, input=("\n".join(shas) + "\n").encode())


@pytest.mark.parametrize("flags", [(), ("--no-delta-base-offset",)], ids=["ofs-delta", "ref-delta"])
def test_a_git_pack_reads_as_git_holds_it_and_indexes_as_git_does(session_repo, tmp_path, flags):
    git_dir, shas = session_repo
    data = _pack(git_dir, shas, *flags)
    got = received_pack.parse(data, 1 << 30)
    assert sorted(x.decode() for x in got.objects) == shas
    for sha in shas[::7]:
        kind = _git("-C", git_dir, "cat-file", "-t", sha).strip().decode()
        body = _git("-C", git_dir, "cat-file", kind, sha)
        t, content = got.objects[sha.encode()]
        assert (t, content) == ({"commit": 1, "tree": 2, "blob": 3, "tag": 4}[kind], body)
    base = got.write_into(str(tmp_path / "objects"))
    _git("verify-pack", base + ".idx")
    mine = open(base + ".idx", "rb").read()
    os.rename(base + ".idx", base + ".mine")
    _git("index-pack", base + ".pack")
    assert open(base + ".idx", "rb").read() == mine


def _reseal(body: bytes) -> bytes:
    return body + hashlib.sha1(body).digest()


def test_what_is_not_a_whole_pack_is_refused(session_repo):
    git_dir, shas = session_repo
    data = _pack(git_dir, shas)
    body = data[:-20]
    bad = {
        "empty": b"",
        "not a pack": b"NOPE" + data[4:],
        "checksum": data[:-1] + bytes([data[-1] ^ 1]),
        "truncated": _reseal(body[: len(body) // 2]),
        "trailing bytes": _reseal(body + b"\0\0\0"),
        "more objects claimed": _reseal(body[:8] + (int.from_bytes(body[8:12], "big") + 1).to_bytes(4, "big") + body[12:]),
        "version": _reseal(body[:4] + (9).to_bytes(4, "big") + body[8:]),
    }
    for why, b in bad.items():
        with pytest.raises(RemoteDataError):
            received_pack.parse(b, 1 << 30)
        assert why
    with pytest.raises(RemoteDataError):   # inflates past the limit
        received_pack.parse(data, 1000)


def test_a_thin_pack_against_objects_never_named_is_refused(session_repo):
    git_dir, shas = session_repo
    head = _git("-C", git_dir, "rev-parse", "refs/heads/main").strip().decode()
    parent = _git("-C", git_dir, "rev-parse", "refs/heads/main^").strip().decode()
    thin = _git("-C", git_dir, "pack-objects", "--stdout", "-q", "--thin", "--revs",
                input=f"{head}\n^{parent}\n".encode())
    with pytest.raises(RemoteDataError, match="did not send"):
        received_pack.parse(thin, 1 << 30)


def _entry(type_num: int, body: bytes) -> bytes:
    size = len(body)
    c = (type_num << 4) | (size & 15)
    size >>= 4
    out = bytearray()
    while size:
        out.append(c | 0x80)
        c, size = size & 0x7F, size >> 7
    out.append(c)
    return bytes(out) + zlib.compress(body)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 5, 6, 7]), st.binary(max_size=60)), max_size=6),
       st.integers(min_value=0, max_value=400), st.binary(max_size=3))
def test_any_sealed_bytes_parse_or_are_refused_as_remote_data(entries, cut, junk):
    """Entries of any type with any content (deltas and trees of garbage), cut anywhere, with the
    checksum made to hold: a parse either checks out (each object named by its content) or is
    RemoteDataError — never another exception."""
    body = b"PACK" + (2).to_bytes(4, "big") + len(entries).to_bytes(4, "big")
    body += b"".join((_entry(t, b) if t not in (6, 7) else _entry(t, b"\x01" + b) if t == 6 else
                      bytes([(7 << 4) | 1]) + b[:20].ljust(20, b"\0") + zlib.compress(b"x")) for t, b in entries)
    body = body[: 12 + cut] + junk if cut < len(body) - 12 else body
    try:
        got = received_pack.parse(_reseal(body), 1 << 20)
    except RemoteDataError:
        return
    for sha, (t, content) in got.objects.items():
        h = hashlib.sha1({1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}[t] + b" %d\0" % len(content) + content)
        assert h.hexdigest().encode() == sha


_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=4),
                    st.sampled_from(["user", "llm", "code", "completed", "running", "ROOT", "", "n-1", "x" * 129]),
                    st.lists(st.sampled_from(["a", "b", 1]), max_size=2), st.just({}), st.just({"spawn_branch_root": True}))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from([*FIELDS, "extra"]), _values, max_size=13) |
                st.fixed_dictionaries({"id": st.text(min_size=1, max_size=5), "role": st.sampled_from(["user", "llm"]),
                                       "name": st.text(max_size=3)},
                                      optional={k: _values for k in FIELDS if k not in ("id", "role", "name")}),
                max_size=4))
def test_untrusted_records_become_what_from_dict_makes_or_its_error(records):
    def each(rs):
        out = []
        for d in rs:
            try:
                out.append(("ok", Call.from_dict(d)))
            except (SessionDagError, TypeError) as e:
                out.append(("error", type(e), str(e)))
                break
        return out
    want = each(records)
    try:
        got = [("ok", c) for c in untrusted_nodes.calls_of(records)]
    except (SessionDagError, TypeError) as e:
        got = [x for x in want if x[0] == "ok"] + [("error", type(e), str(e))]
        assert got == want
        return
    assert len(got) == len(want) and all(w[0] == "ok" for w in want)
    for (_, a), (_, b) in zip(got, want):
        if "id" in b.to_dict() and not isinstance(records[got.index(("ok", a))].get("id"), str):
            continue   # a minted id: random on both sides
        assert a.to_dict() == b.to_dict()
        assert a.is_spawn_root == b.is_spawn_root
