"""What `sessiondag run` does when the agent wants to write a file or run a command it was not
allowed up front (`--allow write,run`): on a terminal it asks (`y` once, `a` always for this run,
`n` no); headless it refuses, and says on stderr what was refused and how to allow it — the model
sees the refusal as the tool's error and goes on."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from ..runtime.permissions import Permissions
    from .progress import Progress

WHY = {"write": "writing files", "run": "running commands"}


def _what(detail: Mapping[str, object]) -> str:
    return str(detail.get("path") or detail.get("command") or detail.get("tool") or detail)


def run_permissions(allowed: set[str], *, progress: Progress | None = None, interactive: bool | None = None,
                    prog: str = "sessiondag run") -> Permissions:
    from ..runtime.permissions import allow_policy

    granted = set(allowed)
    lock = threading.Lock()
    if interactive is None:
        try:
            interactive = sys.stdin.isatty() and sys.stderr.isatty()
        except (ValueError, OSError):
            interactive = False

    def policy(kind: str, detail: Mapping[str, object]) -> bool:
        if allow_policy(granted)(kind, detail):  # write, run, all, mcp, mcp:<server>[/<tool>]
            return True
        if not interactive:
            print(f"{prog}: refused {kind} {_what(detail)}: {WHY.get(kind, kind)} needs permission "
                  f"(pass --allow {kind}, or --allow write,run)", file=sys.stderr)
            return False
        with lock:  # one question at a time (sub-agents may ask together)
            if progress is not None:
                progress.pause()
            try:
                while True:
                    sys.stderr.write(f"allow {kind} {_what(detail)}? [y] once  [a] always  [N] no: ")
                    sys.stderr.flush()
                    line = sys.stdin.readline()
                    a = line.strip().lower()
                    if not line or a in ("", "n", "no"):
                        if not line:
                            sys.stderr.write("\n")
                        return False
                    if a in ("y", "yes"):
                        return True
                    if a in ("a", "always"):
                        granted.add(str(detail.get("tool") or kind) if kind == "mcp" else kind)
                        return True
            finally:
                if progress is not None:
                    progress.resume()
    policy.allowed = frozenset(allowed)  # type: ignore[attr-defined]
    return policy
