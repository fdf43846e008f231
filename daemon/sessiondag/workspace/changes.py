"""Coalescing file changes into `metadata.workspace_changes` entries: {path, change}."""

from __future__ import annotations

from typing import Iterable

from watchfiles import Change, DefaultFilter

KINDS = {Change.added: "added", Change.modified: "modified", Change.deleted: "deleted"}
_FILTER = DefaultFilter()
IGNORE_DIRS = frozenset(_FILTER.ignore_dirs) | {".git", ".cache", "dist", "build", ".ruff_cache"}


def interesting(change: Change, path: str) -> bool:
    """False for .git, caches, editor swap files and similar junk."""
    parts = path.replace("\\", "/").split("/")
    if any(p in IGNORE_DIRS or p.endswith(".egg-info") for p in parts):
        return False
    return _FILTER(change, path)


def not_in_git(change: Change, path: str) -> bool:
    """Every change but those inside a `.git` directory (what a workspace snapshot must hear of)."""
    return ".git" not in path.replace("\\", "/").split("/")


def merge(entries: Iterable[dict[str, str]], new: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    """Fold (path, kind) events into entries; one entry per path, net effect only.

    added→modified = added; added→deleted = gone; deleted→added = modified; modified→deleted = deleted.
    """
    state: dict[str, str] = {e["path"]: e["change"] for e in entries}
    for path, kind in new:
        old = state.get(path)
        if old is None:
            state[path] = kind
        elif old == "added":
            if kind == "deleted":
                del state[path]
        elif old == "deleted":
            state[path] = "modified" if kind in ("added", "modified") else "deleted"
        else:  # modified
            state[path] = "deleted" if kind == "deleted" else "modified"
    return [{"path": p, "change": k} for p, k in sorted(state.items())]
