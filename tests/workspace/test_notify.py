"""The adapter over watchfiles' private Rust watcher (workspace/notify.py), against the installed
watchfiles: a real inotify watch on a real directory."""

from __future__ import annotations

import threading

import pytest
from watchfiles import Change

from sessiondag.workspace.notify import Notifier


def _wait_for(n: Notifier, pred, stop=None, rounds: int = 50):
    seen = set()
    for _ in range(rounds):
        got = n.wait(debounce_ms=200, step_ms=20, timeout_ms=200, stop=stop)
        if isinstance(got, set):
            seen |= got
            if pred(seen):
                return seen
    raise AssertionError(f"changes never matched; saw {seen}")


def test_a_new_file_is_reported_as_a_typed_change(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    with Notifier([str(tmp_path)], recursive=True) as n:
        (sub / "a.txt").write_text("x")  # the watch holds once the constructor returned
        seen = _wait_for(n, lambda s: any(p.endswith("a.txt") for _, p in s))
    assert all(isinstance(c, Change) for c, _ in seen)
    assert (Change.added, str(sub / "a.txt")) in seen


def test_not_recursive_sees_only_the_top_level(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    with Notifier([str(tmp_path)], recursive=False) as n:
        (sub / "deep.txt").write_text("x")
        (tmp_path / "top.txt").write_text("x")
        seen = _wait_for(n, lambda s: any(p.endswith("top.txt") for _, p in s))
    assert not any(p.endswith("deep.txt") for _, p in seen)


def test_a_missing_path_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        Notifier([str(tmp_path / "nope")], recursive=True)


def test_timeout_and_stop(tmp_path):
    with Notifier([str(tmp_path)], recursive=True) as n:
        assert n.wait(debounce_ms=50, step_ms=10, timeout_ms=50) == "timeout"
        stop = threading.Event()
        stop.set()
        assert n.wait(debounce_ms=50, step_ms=10, stop=stop) == "stop"


def test_closed_refuses_to_wait(tmp_path):
    n = Notifier([str(tmp_path)], recursive=True)
    n.close()
    with pytest.raises(RuntimeError):
        n.wait(debounce_ms=50, step_ms=10, timeout_ms=50)
