import os

import pytest
from hypothesis import given, settings, strategies as st

from sessiondag.runtime.errors import PathRefusedError, PermissionDeniedError
from sessiondag.runtime.runtime import Runtime, allow_policy
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.tools import (ToolContext, edit_file, list_dir, read_file, resolve, run_command,
                                      search_text, write_file)


def ctx(wd, allow=()):
    return ToolContext(str(wd), Runtime(ScriptedProvider(), permissions=allow_policy(set(allow))))


@pytest.fixture
def ws(tmp_path):
    wd = tmp_path / "ws"
    (wd / "src").mkdir(parents=True)
    (wd / "src" / "a.py").write_text("def f():\n    return 1\n")
    (wd / "notes.txt").write_text("hello world\nTODO: fix\n")
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key.txt").write_text("s3cret")
    os.symlink(outside, wd / "escape")
    os.symlink(outside / "key.txt", wd / "key-link.txt")
    os.symlink(wd / "notes.txt", wd / "inside-link.txt")
    return wd


HOSTILE = ["/etc/passwd", "../secret/key.txt", "src/../../secret/key.txt", "escape/key.txt", "key-link.txt",
           "escape", "~/x", "src/..", "..", "a\x00b", "", "escape/new.txt"]


@pytest.mark.parametrize("path", HOSTILE)
def test_hostile_paths_are_refused_for_reads(ws, path):
    with pytest.raises(PathRefusedError):
        read_file(ctx(ws), path)


@pytest.mark.parametrize("path", HOSTILE)
def test_hostile_paths_are_refused_for_writes_even_when_allowed(ws, path, tmp_path):
    with pytest.raises(PathRefusedError):
        write_file(ctx(ws, {"write"}), path, "pwned")
    assert (tmp_path / "secret" / "key.txt").read_text() == "s3cret"
    assert not (tmp_path / "secret" / "new.txt").exists()


def test_symlink_inside_is_fine(ws):
    assert read_file(ctx(ws), "inside-link.txt").startswith("hello")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["..", ".", "src", "escape", "key-link.txt", "x", "/", "//", "notes.txt"]),
                min_size=1, max_size=6))
def test_resolve_never_leaves_the_working_dir(tmp_path_factory, parts):
    base = tmp_path_factory.mktemp("h")
    wd = base / "ws"
    (wd / "src").mkdir(parents=True)
    (base / "out").mkdir()
    if not (wd / "escape").exists():
        os.symlink(base / "out", wd / "escape")
    path = "/".join(parts)
    try:
        real = resolve(str(wd), path)
    except PathRefusedError:
        return
    root = os.path.realpath(wd)
    assert real == root or real.startswith(root + os.sep)


def test_read_list_search(ws):
    c = ctx(ws)
    assert list_dir(c).splitlines() == ["escape@", "inside-link.txt@", "key-link.txt@", "notes.txt", "src/"]
    assert list_dir(c, "src") == "a.py"
    hits = search_text(c, "TODO")
    assert hits.splitlines() == ["notes.txt:2: TODO: fix"]      # the walk follows no symlink
    assert search_text(c, "TODO", "inside-link.txt") == "notes.txt:2: TODO: fix"   # named: followed inside
    assert "src/a.py:1:" in search_text(c, r"def \w+", regex=True)
    assert "s3cret" not in search_text(c, "s3cret")


def test_write_and_edit_need_permission_and_refusal_writes_nothing(ws):
    with pytest.raises(PermissionDeniedError):
        write_file(ctx(ws), "new.txt", "x")
    assert not (ws / "new.txt").exists()
    with pytest.raises(PermissionDeniedError):
        write_file(ctx(ws), "deep/dir/new.txt", "x")
    assert not (ws / "deep").exists()
    with pytest.raises(PermissionDeniedError):
        edit_file(ctx(ws), "notes.txt", "hello", "bye")
    assert (ws / "notes.txt").read_text().startswith("hello")
    c = ctx(ws, {"write"})
    write_file(c, "deep/dir/new.txt", "content")
    assert (ws / "deep/dir/new.txt").read_text() == "content"
    edit_file(c, "notes.txt", "hello", "bye")
    assert (ws / "notes.txt").read_text().startswith("bye world")
    with pytest.raises(ValueError, match="exactly once"):
        edit_file(c, "notes.txt", "nothing-like-this", "x")


@pytest.mark.process
def test_run_command_permission_timeout_and_cap(ws):
    with pytest.raises(PermissionDeniedError):
        run_command(ctx(ws), "touch ran.txt")
    assert not (ws / "ran.txt").exists()
    c = ctx(ws, {"run"})
    out = run_command(c, "pwd; echo hi")
    assert out.splitlines()[0] == "exit code 0" and os.path.realpath(ws) in out and "hi" in out
    out = run_command(c, "sleep 30", timeout=0.3)
    assert out.startswith("timed out")
    out = run_command(c, "head -c 200000 /dev/zero | tr '\\0' a")
    assert "truncated" in out and len(out) < 70_000
