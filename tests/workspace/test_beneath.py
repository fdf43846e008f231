"""workspace/beneath.py: every open stays under the root, whatever is planted or swapped on the way.
Each test runs with both resolvers (openat2, and the openat O_NOFOLLOW walk)."""

import os
import stat
import threading

import pytest
from hypothesis import given, settings, strategies as st

from sessiondag.core.errors import PathRefusedError
from sessiondag.workspace.beneath import Beneath, openat2_available, shown, split, unshown
from tests.reliability.campaign_escape import OUTSIDE_SECRET, campaign


@pytest.fixture(params=["openat2", "walk"])
def resolver(request):
    return request.param


@pytest.fixture
def tree(tmp_path):
    wd, out = tmp_path / "wd", tmp_path / "out"
    (wd / "src" / "deep").mkdir(parents=True)
    out.mkdir()
    (wd / "src" / "a.txt").write_bytes(b"alpha")
    (wd / "src" / "deep" / "b.txt").write_bytes(b"beta")
    (out / "secret").write_bytes(b"SECRET")
    os.symlink(out, wd / "esc")                      # a dir symlink leading out
    os.symlink(out / "secret", wd / "esc-file")      # a file symlink leading out
    os.symlink("src/a.txt", wd / "in-link")          # relative, stays inside
    os.symlink(str(wd / "src"), wd / "in-abs")       # absolute, stays inside
    return wd, out


def refused(reason, fn, *a, **kw):
    with pytest.raises(PathRefusedError) as e:
        fn(*a, **kw)
    assert e.value.reason == reason, e.value
    return e.value


def test_this_kernel_has_openat2():
    assert openat2_available(), "issue 19 expects openat2 (Linux >= 5.6) on the build machines"


def test_reads_writes_and_listing(tree, resolver):
    wd, _ = tree
    with Beneath(wd, resolver=resolver) as b:
        assert b.use_openat2 == (resolver == "openat2")
        assert b.read_bytes("src/a.txt") == b"alpha"
        assert b.read_bytes("./src//deep/b.txt") == b"beta"
        assert b.read_bytes("src/a.txt", limit=2) == b"alp"
        b.write_bytes("new/dir/c.txt", b"gamma")
        assert (wd / "new" / "dir" / "c.txt").read_bytes() == b"gamma"
        os.chmod(wd / "src" / "a.txt", 0o600)
        b.write_bytes("src/a.txt", b"ALPHA")
        assert (wd / "src" / "a.txt").read_bytes() == b"ALPHA"
        assert stat.S_IMODE(os.stat(wd / "src" / "a.txt").st_mode) == 0o600   # the mode is kept
        ino = os.stat(wd / "src" / "deep" / "b.txt").st_ino
        b.write_bytes("src/deep/b.txt", b"B", atomic=False)
        assert os.stat(wd / "src" / "deep" / "b.txt").st_ino == ino and (wd / "src/deep/b.txt").read_bytes() == b"B"
        assert not [n for n in os.listdir(wd / "src") if n.endswith(".tmp")]
        kinds = {e.name: e.kind for e in b.listdir(".")}
        assert kinds == {b"src": "dir", b"new": "dir", b"esc": "symlink", b"esc-file": "symlink",
                         b"in-link": "symlink", b"in-abs": "symlink"}
        walked = [rel for rel, _ in b.walk(".", skip={b"new"})]
        assert walked == [b"esc", b"esc-file", b"in-abs", b"in-link", b"src", b"src/a.txt", b"src/deep",
                          b"src/deep/b.txt"]
        assert stat.S_ISLNK(b.lstat("esc").st_mode) and stat.S_ISDIR(b.lstat(".").st_mode)
        b.mkdir("m/n", parents=True)
        b.mkdir("m/n", exist_ok=True)
        b.rename("new/dir/c.txt", "m/n/c.txt")
        b.unlink("m/n/c.txt")
        b.rmdir("m/n")
        assert not b.exists("m/n") and b.exists("m")
        b.rename("esc", "m/esc2")                   # a symlink moves as itself
        assert os.readlink(wd / "m" / "esc2") == str(tree[1])


def test_symlinks_on_the_way_are_refused(tree, resolver):
    wd, out = tree
    with Beneath(wd, resolver=resolver) as b:
        refused("symlink", b.read_bytes, "esc/secret")
        refused("symlink", b.read_bytes, "esc-file")
        refused("symlink", b.read_bytes, "in-link")       # even inside: the walk follows none
        refused("symlink", b.write_bytes, "esc/new", b"x")
        refused("symlink", b.write_bytes, "esc/deeper/new", b"x")
        refused("symlink", b.write_bytes, "esc-file", b"x", atomic=False)
        refused("symlink", b.write_bytes, "esc-file", b"x")
        refused("symlink", b.listdir, "esc")
        refused("symlink", b.mkdir, "esc/d", parents=True)
        refused("symlink", b.unlink, "esc/secret")
        refused("symlink", lambda: list(b.walk("esc")))
        refused("absolute", b.read_bytes, str(out / "secret"))
        refused("dot_dot", b.read_bytes, "src/../../out/secret")
        refused("not_a_path", b.read_bytes, "")
        refused("not_a_path", b.read_bytes, "a\x00b")
        refused("not_a_path", b.read_bytes, "bad\ud800")
    assert sorted(os.listdir(out)) == ["secret"] and (out / "secret").read_bytes() == b"SECRET"


def test_through_links_follows_only_links_that_stay_inside(tree, resolver):
    wd, _ = tree
    with Beneath(wd, resolver=resolver) as b:
        assert b.through_links("in-link") == b"src/a.txt"
        assert b.read_bytes(b.through_links("in-abs/deep/b.txt")) == b"beta"
        assert b.through_links("src/missing/x") == b"src/missing/x"
        refused("symlink", b.through_links, "esc/secret")
        refused("symlink", b.through_links, "esc-file")
        os.symlink("../../out", wd / "src" / "up")
        refused("symlink", b.through_links, "src/up/secret")
        os.symlink("loop", wd / "loop")
        refused("symlink", b.through_links, "loop")


def test_hard_links_refused_for_writes_and_reads_unless_allowed(tree, resolver):
    wd, out = tree
    os.link(out / "secret", wd / "hl")
    with Beneath(wd, resolver=resolver) as b:
        refused("hard_link", b.write_bytes, "hl", b"pwned")
        refused("hard_link", b.write_bytes, "hl", b"pwned", atomic=False)
        refused("hard_link", b.read_bytes, "hl")
    with Beneath(wd, resolver=resolver, allow_hard_link_reads=True) as b:
        assert b.read_bytes("hl") == b"SECRET"
        refused("hard_link", b.write_bytes, "hl", b"pwned")
    assert (out / "secret").read_bytes() == b"SECRET"


def test_special_files_are_refused_without_blocking(tree, resolver):
    wd, _ = tree
    os.mkfifo(wd / "fifo")
    done = {}

    def attempt():
        with Beneath(wd, resolver=resolver) as b:
            for op in (lambda: b.read_bytes("fifo"), lambda: b.write_bytes("fifo", b"x", atomic=False),
                       lambda: b.write_bytes("fifo", b"x"), lambda: b.read_bytes("src")):
                with pytest.raises(PathRefusedError) as e:
                    op()
                done.setdefault("reasons", []).append(e.value.reason)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "an open of a FIFO blocked"
    assert done["reasons"] == ["not_regular"] * 4
    assert stat.S_ISFIFO(os.lstat(wd / "fifo").st_mode)


def test_names_that_are_not_utf8(tmp_path, resolver):
    wd = tmp_path / "wd"
    wd.mkdir()
    raw = b"bad\xff\n\\name.txt"
    with open(os.path.join(os.fsencode(wd), raw), "wb") as f:
        f.write(b"content")
    with Beneath(wd, resolver=resolver) as b:
        [e] = b.listdir()
        assert e.name == raw and e.kind == "file"
        assert e.shown == "bad\\xff\\x0a\\\\name.txt"
        e.shown.encode("utf-8")
        assert b.read_bytes(e.name) == b.read_bytes(unshown(e.shown)) == b"content"
        assert b.read_bytes(os.fsdecode(raw)) == b"content"      # a surrogate-escaped str works too


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_shown_is_lossless_and_encodable(name):
    text = shown(name)
    text.encode("utf-8")
    assert "\n" not in text and unshown(text) == name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["..", ".", "src", "esc", "esc-file", "in-link", "x", "", "/", "secret"]),
                min_size=1, max_size=6), st.sampled_from(["openat2", "walk"]))
def test_nothing_outside_is_ever_read(tmp_path_factory, parts, resolver):
    base = tmp_path_factory.mktemp("h")
    wd, out = base / "wd", base / "out"
    (wd / "src").mkdir(parents=True)
    out.mkdir()
    (out / "secret").write_bytes(b"SECRET")
    os.symlink(out, wd / "esc")
    os.symlink(out / "secret", wd / "esc-file")
    with Beneath(wd, resolver=resolver) as b:
        for p in ("/".join(parts), "/".join(parts).lstrip("/")):
            try:
                assert b.read_bytes(p) != b"SECRET"
            except (PathRefusedError, OSError):
                pass
            try:
                b.write_bytes(p + "/w", b"w")
            except (PathRefusedError, OSError):
                pass
    assert os.listdir(out) == ["secret"]


def test_walk_is_bounded(tmp_path, resolver):
    wd = tmp_path / "wd"
    p = wd
    for i in range(6):
        p = p / f"d{i}"
    p.mkdir(parents=True)
    for i in range(10):
        (wd / f"f{i}").write_bytes(b"")
    with Beneath(wd, resolver=resolver) as b:
        refused("too_many", lambda: list(b.walk(".", max_entries=5)))
        refused("too_many", lambda: list(b.walk(".", max_depth=3)))
        assert len(list(b.walk("."))) == 16
    assert split("a//./b/") == [b"a", b"b"]


def test_swapping_a_dir_for_a_symlink_never_leads_out(tmp_path, resolver):
    def rd(wd, rel):
        with Beneath(wd, resolver=resolver) as b:
            return b.read_bytes(rel)

    def wr(wd, rel):
        with Beneath(wd, resolver=resolver) as b:
            b.write_bytes(rel, b"w")

    r = campaign(str(tmp_path), rd, wr, 300)
    assert r["escapes"] == 0 and r["hangs"] == 0, r
    assert r["ok"] > 0 and r["refused"] > 0, r      # the swaps really happened on both sides


def test_the_campaign_finds_the_unconfined_kind(tmp_path):
    """The same campaign against realpath-then-open (the tools before issue 19) escapes."""
    def rd(wd, rel):
        real = os.path.realpath(os.path.join(wd, rel))
        if not real.startswith(os.path.realpath(wd) + os.sep):
            raise PermissionError(rel)
        with open(real, "rb") as f:
            return f.read()

    def wr(wd, rel):
        real = os.path.realpath(os.path.join(wd, rel))
        if not real.startswith(os.path.realpath(wd) + os.sep):
            raise PermissionError(rel)
        fd = os.open(os.path.join(wd, rel), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        os.close(fd)

    r = campaign(str(tmp_path), rd, wr, 20000, stop_at_escape=True)
    assert r["escapes"] >= 1, r
    assert OUTSIDE_SECRET


def test_the_resolver_is_passed_in_never_read_from_the_environment(tmp_path, monkeypatch):
    # workspace.beneath ($SESSIONDAG_BENEATH is one of its sources) reaches a Beneath through its builder
    monkeypatch.setenv("SESSIONDAG_BENEATH", "walk")
    with Beneath(tmp_path) as b:
        assert b.use_openat2 == openat2_available()
    with Beneath(tmp_path, resolver="walk") as b:
        assert not b.use_openat2
    with pytest.raises(ValueError):
        Beneath(tmp_path, resolver="fast")
