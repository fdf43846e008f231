"""Processes a test started, seen through /proc: a `sessiondag run` works through a private daemon
child (cli/remote_run.py), so what the run holds (a flock, a lease) may be its child's."""

from __future__ import annotations

import os


def _ppid_and_state(pid: int) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()   # after "pid (comm) "
    return int(fields[1]), fields[0].decode()


def descendants(pid: int) -> set[int]:
    """The live processes below `pid` (children, theirs, …)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            got = _ppid_and_state(int(name))
            if got is not None:
                children.setdefault(got[0], []).append(int(name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def gone(pid: int) -> bool:
    """Has `pid` ended (no such process, or a zombie nobody reaped yet)?"""
    got = _ppid_and_state(pid)
    return got is None or got[1] in ("Z", "X")
