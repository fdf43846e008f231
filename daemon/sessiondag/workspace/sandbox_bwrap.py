"""run_command's sandbox where the kernel has no Landlock: bubblewrap (`bwrap`, Debian's bubblewrap).

The same rules as sandbox_exec.py, by mounts instead of Landlock rights: the whole file system is
bound read-only, a fresh /dev and /proc are mounted, and only the private tmp (and, for
`workspace-write`, the working dir) are bound writable; without network the command gets its own
network namespace (loopback only, nothing listening: a connect to the host's servers fails).
`--die-with-parent` and `--new-session` keep it from outliving or reaching the daemon's terminal.
"""

from __future__ import annotations

import shutil


def path() -> str | None:
    """The bwrap executable on PATH, or None."""
    return shutil.which("bwrap")


def argv(bwrap: str, mode: str, wd: str, tmp: str, net: bool, cmd: list[str]) -> list[str]:
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", tmp, tmp]
    if mode == "workspace-write":
        out += ["--bind", wd, wd]
    if not net:
        out += ["--unshare-net"]
    return out + ["--die-with-parent", "--new-session", "--setenv", "TMPDIR", tmp, "--chdir", wd, "--", *cmd]
