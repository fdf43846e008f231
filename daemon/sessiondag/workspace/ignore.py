"""Which paths of a working dir a snapshot leaves out: the rules git itself would apply.

`.gitignore` files of every directory, `.git/info/exclude` of the repository at the root (when the
working dir is one), and the user's global excludes (`core.excludesFile`, else
`$XDG_CONFIG_HOME/git/ignore`), through dulwich's ignore module (which refuses a symlinked
.gitignore, as git does). `.git` itself (a directory, or the file of a worktree) is always left
out, at every level. Everything here only reads: the user's repository is never written.
"""

from __future__ import annotations

import os
from contextlib import suppress

from dulwich.config import ConfigFile, StackedConfig
from dulwich.ignore import IgnoreFilter, IgnoreFilterManager, default_user_ignore_filter_path

GIT = b".git"


def _git_dir(root: str) -> str | None:
    """The repository directory of a working dir at `root`: `.git/`, or where a `.git` file points."""
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot) and not os.path.islink(dot):
        return dot
    if os.path.isfile(dot) and not os.path.islink(dot):
        with suppress(OSError, UnicodeDecodeError):
            with open(dot, "rb") as f:
                line = f.read(4096).decode().strip()
            if line.startswith("gitdir:"):
                target = line[len("gitdir:"):].strip()
                return os.path.normpath(os.path.join(root, target))
    return None


class _Rules(IgnoreFilterManager):
    """dulwich's manager, told what is a directory by its caller only: a path is one when it ends
    with `/` (IgnoreRules passes the kind the walk's lstat gave). dulwich asks the file system
    otherwise (os.path.isdir follows symlinks: a link to a directory fell under `d/`, which git
    never applies to a link), a syscall per question besides. `_is_dir` is dulwich's own hook
    (pyproject.toml bounds dulwich's version; tests/workspace/test_warm_walk.py holds it)."""

    def _is_dir(self, path: str) -> bool:
        return path.endswith("/")


class IgnoreRules:
    """`ignored(rel, is_dir)` for paths relative to `root` (bytes, `/`-separated)."""

    def __init__(self, root: str):
        self.root = root
        config = StackedConfig(StackedConfig.default_backends())
        git_dir = _git_dir(root)
        filters = []
        sources = []
        if git_dir is not None:
            with suppress(OSError, ValueError):
                config = StackedConfig([ConfigFile.from_path(os.path.join(git_dir, "config")),
                                        *StackedConfig.default_backends()])
            sources.append(os.path.join(git_dir, "info", "exclude"))
        with suppress(Exception):
            sources.append(os.path.expanduser(default_user_ignore_filter_path(config)))
        for p in sources:
            with suppress(OSError):
                filters.append(IgnoreFilter.from_path(p))
        ignorecase = False
        with suppress(Exception):
            ignorecase = config.get_boolean((b"core",), b"ignorecase", False)
        self.sources = tuple(sources)   # the files outside the tree whose change changes the rules
        self._manager = _Rules(root, filters, ignorecase)

    def ignored(self, rel: bytes, is_dir: bool) -> bool:
        if rel.rsplit(b"/", 1)[-1] == GIT:
            return True
        path = os.fsdecode(rel) + ("/" if is_dir else "")
        try:
            return bool(self._manager.is_ignored(path))
        except Exception:  # a malformed pattern: git would not ignore by it either
            return False
