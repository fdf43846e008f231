"""Listing reuse only on file systems that move a directory's stat on every entry change
(workspace/mounts.py). Real mounts: a tmpfs (allowlisted) reuses listings; a ramfs (a real local
file system, but not on the list) and a ramfs mounted beneath a tmpfs working dir make the walk read
every directory, and a file added there is seen. The mount table parse on this process's real
/proc/self/mountinfo and on crafted text: escaped mount points (\\040 ...), stacked mounts, the
longest prefix, malformed or unreadable tables (no reuse). These tests mount, so they need root
(as tests/store/fault_fs.py): a clear failure otherwise."""

import os
import subprocess
from contextlib import contextmanager

import pytest
from hypothesis import given, strategies as st

from sessiondag.workspace import mounts
from sessiondag.workspace.mounts import Mount, MountinfoError, listings_safe, mounts_for, parse, unescape
from sessiondag.workspace.snapshot import Snapshotter


def take(snap):
    seen: set = set()
    state = snap.take(lambda sha: sha in seen, lambda sha, data: seen.add(sha))
    snap.stored(state)
    return state


@contextmanager
def mounted(fstype, path):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", fstype, fstype, str(path)], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"mount -t {fstype} {path} failed (these tests need root): {r.stderr.strip()}")
    try:
        yield str(path)
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(wd):
    for d in ("a", "a/b", "c"):
        os.makedirs(os.path.join(wd, d), exist_ok=True)
        with open(os.path.join(wd, d, "f.txt"), "w") as f:
            f.write(d)


def two_walks(wd):
    """A snapshot, then a second one with the racy window past every ctime (listings trusted)."""
    snap = Snapshotter(wd, os.path.join(wd, "..", os.path.basename(wd) + ".cache"))
    snap.clock = lambda: 1 << 62
    take(snap)
    take(snap)
    return snap


@pytest.mark.root   # it mounts (tests/tiers.py: root implies process)
def test_a_tmpfs_working_dir_reuses_listings(tmp_path):
    with mounted("tmpfs", tmp_path / "mnt") as mnt:
        wd = os.path.join(mnt, "wd")
        fill(wd)
        assert listings_safe(wd)
        snap = two_walks(wd)
        assert snap.reuse_listings and snap.reused == snap.listed == 4


@pytest.mark.root   # it mounts (tests/tiers.py: root implies process)
def test_a_ramfs_working_dir_reads_every_directory(tmp_path):
    with mounted("ramfs", tmp_path / "mnt") as mnt:
        wd = os.path.join(mnt, "wd")
        fill(wd)
        assert not listings_safe(wd)
        snap = two_walks(wd)
        assert not snap.reuse_listings and snap.reused == 0 and snap.listed == 4
        with open(os.path.join(wd, "a", "new.txt"), "w") as f:
            f.write("x")
        assert b"a/new.txt" in take(snap).entries


@pytest.mark.root   # it mounts (tests/tiers.py: root implies process)
def test_an_unlisted_mount_beneath_a_tmpfs_working_dir_turns_reuse_off(tmp_path):
    with mounted("tmpfs", tmp_path / "mnt") as mnt:
        wd = os.path.join(mnt, "wd")
        fill(wd)
        with mounted("ramfs", os.path.join(wd, "c", "inner")):
            assert not listings_safe(wd)
            assert listings_safe(os.path.join(wd, "a"))      # not above the ramfs
            assert two_walks(wd).reused == 0
        assert listings_safe(wd)


def test_the_real_mount_table_parses_and_holds_the_root():
    with open(mounts.MOUNTINFO, "rb") as f:
        table = parse(f.read())
    assert table and any(m.point == b"/" for m in table)
    holder = mounts_for(b"/", table)[0]
    assert holder.point == b"/"
    # the type agrees with the one /proc/mounts names for the last mount on /
    with open("/proc/mounts", "rb") as f:
        last_root = [ln.split(b" ")[2] for ln in f.read().splitlines() if ln.split(b" ")[1] == b"/"][-1]
    assert holder.fstype == last_root


LINE = b"36 35 98:0 /mnt1 %s rw,noatime master:1 - %s /dev/root rw,errors=continue"


def table(*rows):
    return b"\n".join(LINE % (p, t) for p, t in rows) + b"\n"


def test_escaped_mount_points_are_unescaped(tmp_path):
    text = table((b"/", b"ext4"), (b"/srv/my\\040work\\011dir", b"nfs4"), (b"/srv/back\\134slash", b"vfat"))
    got = parse(text)
    assert [m.point for m in got] == [b"/", b"/srv/my work\tdir", b"/srv/back\\slash"]
    assert mounts_for(b"/srv/my work\tdir/repo", got) == [Mount(b"/srv/my work\tdir", b"nfs4")]
    assert mounts_for(b"/srv/my work", got) == [Mount(b"/", b"ext4")]      # a prefix, not the mount
    assert mounts_for(b"/srv/back\\slash", got)[0].fstype == b"vfat"


def test_the_longest_prefix_and_the_last_stacked_mount_decide(tmp_path):
    text = table((b"/", b"ext4"), (b"/w", b"nfs"), (b"/w", b"tmpfs"), (b"/w/x", b"fuse.sshfs"), (b"/wx", b"vfat"))
    got = parse(text)
    assert mounts_for(b"/w/y", got)[0] == Mount(b"/w", b"tmpfs")
    assert mounts_for(b"/wx/y", got) == [Mount(b"/wx", b"vfat")]
    assert [m.fstype for m in mounts_for(b"/w", got)] == [b"tmpfs", b"fuse.sshfs"]
    d = str(tmp_path)   # listings_safe takes the real path of a directory that exists
    fake = table((b"/", b"xfs"))
    assert listings_safe(d, fake)
    for t in (b"vfat", b"exfat", b"nfs4", b"cifs", b"smb3", b"fuse.sshfs", b"9p", b"ramfs"):
        assert not listings_safe(d, table((b"/", b"ext4"), (os.fsencode(os.path.realpath(d)), t))), t


def test_a_symlinked_working_dir_is_judged_by_its_real_path(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    text = table((b"/", b"ext4"), (os.fsencode(os.path.realpath(real)), b"vfat"))
    assert not listings_safe(str(tmp_path / "link"), text)


@pytest.mark.parametrize("text", [
    b"36 35 98:0 / / rw master:1 ext4 /dev/root rw\n",        # no separator
    b"36 35 98:0 / / rw -\n",                                  # no type
    b"36 35 98:0 / relative rw - ext4 /dev/root rw\n",         # not a path
    b"garbage\n",
])
def test_a_malformed_table_means_no_reuse(text, tmp_path):
    with pytest.raises(MountinfoError):
        parse(text)
    assert not listings_safe(str(tmp_path), text)
    assert not listings_safe(str(tmp_path), b"")               # no mount holds it


def test_an_unreadable_table_means_no_reuse(tmp_path, monkeypatch):
    monkeypatch.setattr(mounts, "MOUNTINFO", str(tmp_path / "absent"))
    assert not listings_safe(str(tmp_path))
    assert not Snapshotter(str(tmp_path), None).reuse_listings


@given(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b))
def test_unescape_inverts_the_kernel_escape(path):
    escaped = b"".join(b"\\%03o" % c if c in b" \t\n\\" else bytes([c]) for c in path)
    assert unescape(escaped) == path
