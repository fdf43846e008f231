"""The escape campaign (issue 19, items 1-2): a thread keeps exchanging `wd/sub` between a directory
and a symlink to an outside directory (renameat2 RENAME_EXCHANGE: `sub` always exists, one or the
other) while reads of `sub/secret` and writes of `sub/x` run through `op_read` / `op_write`. An
escape is a read that returned the outside secret, or a write that made `outside/x`. A hang is an
operation that did not come back (guarded by a thread join).

Used by tests/workspace (Beneath itself, both resolvers), tests/runtime (the tools) and the
reliability campaign (many rounds with SESSIONDAG_SLOW=1)."""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable

OUTSIDE_SECRET = b"OUTSIDE-SECRET"
INSIDE_SECRET = b"inside"
_libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def exchange(a: str, b: str) -> None:
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def layout(base: str) -> tuple[str, str]:
    """base/wd (with sub/ holding an inside secret, and sub-link -> base/outside), base/outside."""
    wd, outside = os.path.join(base, "wd"), os.path.join(base, "outside")
    os.makedirs(os.path.join(wd, "sub"))
    os.makedirs(outside)
    with open(os.path.join(wd, "sub", "secret"), "wb") as f:
        f.write(INSIDE_SECRET)
    with open(os.path.join(outside, "secret"), "wb") as f:
        f.write(OUTSIDE_SECRET)
    os.symlink(outside, os.path.join(wd, "sub-link"))
    return wd, outside


def campaign(base: str, op_read: Callable[[str, str], bytes | str], op_write: Callable[[str, str], object],
             attempts: int, *, stop_at_escape: bool = False) -> dict[str, int]:
    """Run `attempts` reads and `attempts` writes against the swapping tree. op_read(wd, rel) -> the
    content read (or raises: a refusal); op_write(wd, rel) writes something at rel (or raises).
    stop_at_escape: end at the first escape (to show that the campaign finds the unconfined kind)."""
    wd, outside = layout(base)
    stop = threading.Event()
    swaps = [0]

    def swapper() -> None:
        a, b = os.path.join(wd, "sub"), os.path.join(wd, "sub-link")
        while not stop.is_set():
            exchange(a, b)
            swaps[0] += 1

    t = threading.Thread(target=swapper, daemon=True)
    t.start()
    r = {"attempts": 0, "escapes": 0, "hangs": 0, "refused": 0, "ok": 0}
    try:
        for _ in range(attempts):
            for kind in ("read", "write"):
                r["attempts"] += 1
                out: dict[str, object] = {}

                def one() -> None:
                    try:
                        out["v"] = op_read(wd, "sub/secret") if kind == "read" else op_write(wd, "sub/x")
                    except Exception as e:  # noqa: BLE001 - a refusal or a vanished path
                        out["e"] = e

                w = threading.Thread(target=one, daemon=True)
                w.start()
                w.join(30)
                if w.is_alive():
                    r["hangs"] += 1
                    continue
                v = out.get("v")
                if isinstance(v, str):
                    v = v.encode()
                if (kind == "read" and v is not None and OUTSIDE_SECRET in v) or \
                        os.path.lexists(os.path.join(outside, "x")):
                    r["escapes"] += 1
                    if os.path.lexists(os.path.join(outside, "x")):
                        os.unlink(os.path.join(outside, "x"))
                r["refused" if "e" in out else "ok"] += 1
            if stop_at_escape and r["escapes"]:
                break
    finally:
        stop.set()
        t.join()
    r["swaps"] = swaps[0]
    return r
