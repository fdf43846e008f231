"""Shared helpers for the store tests."""

import hashlib
import os
import subprocess
import sys

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child.py")


def child_env(state, **extra):
    env = dict(os.environ)
    env["SESSIONDAG_HOME"] = str(state)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def spawn_child(*args, env, stdin=None):
    return subprocess.Popen([sys.executable, CHILD, *map(str, args)], stdout=subprocess.PIPE,
                            stdin=stdin, env=env, text=True, bufsize=1)


def git(git_dir, *args):
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True)


def tree_digest(path):
    """Hash of every file (path, mode, bytes) under `path`."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            st = os.lstat(p)
            h.update(f"{os.path.relpath(p, path)}\0{st.st_mode}\0".encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
        h.update(f"dirs:{dirs}".encode())
    return h.hexdigest()
