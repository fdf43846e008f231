"""What the reliability campaign's phases share: sizes, daemons they start (and clean up), RSS, fsck,
and the check that every acknowledged node is on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from sessiondag.store import SessionStore

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_support import DaemonProc  # noqa: E402

SLOW = bool(os.environ.get("SESSIONDAG_SLOW"))


def rounds(normal: int, slow: int) -> int:
    return slow if SLOW else normal


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fsck(state: str) -> tuple[int, int]:
    """(sessions checked, sessions failing `git fsck --strict`)."""
    root = os.path.join(state, "sessions")
    ok = bad = 0
    for name in sorted(os.listdir(root)):
        if name.startswith("."):
            continue
        r = subprocess.run(["git", "--git-dir", os.path.join(root, name, "git"), "fsck", "--strict", "--no-progress"],
                           capture_output=True, text=True)
        ok, bad = (ok + 1, bad) if r.returncode == 0 else (ok, bad + 1)
    return ok + bad, bad


def present(state: str, acked: dict[str, set[str]]) -> int:
    """How many acknowledged node ids are missing from disk (a fresh in-process store reads them)."""
    store = SessionStore(state)
    lost = 0
    try:
        for sid, ids in acked.items():
            g = store.session(sid).graph
            lost += sum(1 for i in ids if i not in g.nodes)
            store.release(sid)
    finally:
        store.close()
    return lost


def env_for(tmp: str, **extra: str) -> dict[str, str]:
    script = os.path.join(tmp, "script.yaml")
    with open(script, "w") as f:
        f.write("- text: done\n  repeat: true\n")
    return dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=script, **extra)


STARTED: list[DaemonProc] = []


def start_daemon(state: str, env: dict[str, str], *extra: str, preexec: Any = None) -> DaemonProc:
    d = DaemonProc(["--socket", "--state-dir", state, *extra], env=env, preexec_fn=preexec)
    STARTED.append(d)
    return d


def cleanup() -> None:
    """Kill every daemon a phase started and left running (a phase that failed midway)."""
    while STARTED:
        d = STARTED.pop()
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
